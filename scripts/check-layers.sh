#!/usr/bin/env bash
# Checks the folder-level include graph of the sources against the documented layers
# (docs/architecture.md, "Layers"): a folder may include its own headers and those of
# folders in lower layers, never one in its own layer or above. That also rules out cycles.
# Prints every offending include and exits 1; prints one summary line and exits 0 otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# folder -> layer, bottom (0) to top.
declare -A layer=(
  [base]=0
  [security]=1 [netns]=1 [relay]=1
  [runtime]=2
  [dispatch]=3 [supervise]=3
  [cli]=4
)

bad=0
checked=0
for folder in "${!layer[@]}"; do
  while IFS=: read -r file line text; do
    target=$(sed -E 's/.*#include "([^"/]+)\/.*/\1/' <<<"$text")
    [[ -n "${layer[$target]+x}" ]] || continue  # not one of ours (e.g. a system header)
    checked=$((checked + 1))
    if [[ "$target" != "$folder" && ${layer[$target]} -ge ${layer[$folder]} ]]; then
      echo "check-layers: $file:$line: $folder (layer ${layer[$folder]}) includes $target (layer ${layer[$target]})"
      bad=1
    fi
  done < <(grep -rn --include='*.h' --include='*.cc' -E '^#include "[^"/]+/' "$folder" || true)
done
if [[ $bad -ne 0 ]]; then
  echo "check-layers: FAILED: includes must point down the layers: base < security, netns, relay < runtime < dispatch, supervise < cli" >&2
  exit 1
fi
echo "check-layers: $checked includes across ${#layer[@]} folders follow the layers"
