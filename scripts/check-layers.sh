#!/usr/bin/env bash
# Checks the include graph of the sources against the documented layers
# (docs/architecture.md, "Layers"): a folder may include its own headers and those of
# folders in lower layers, never one in its own layer or above. That also rules out cycles.
# dispatch/ and runtime/ are layered inside as well: between two of their parts (a
# subfolder, or the files at the folder's top) the same rule holds on the inner layers.
# Prints every offending include and exits 1; prints one summary line and exits 0 otherwise.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# folder -> layer, bottom (0) to top.
declare -A layer=(
  [base]=0
  [security]=1 [netns]=1 [relay]=1
  [runtime]=2 [contract]=2
  [dispatch]=3 [supervise]=3
  [cli]=4
)

# part -> inner layer, for the folders layered inside. A part is a subfolder, or "top" for
# the files directly in the folder; runtime's plain data types sit below its child code.
declare -A inner=(
  [dispatch/request]=0 [dispatch/sys]=0
  [dispatch/plan]=1
  [dispatch/git]=2
  [dispatch/host]=3 [dispatch/terminal]=3
  [dispatch/record]=4 [dispatch/identity]=4
  [dispatch/top]=5
  [runtime/data]=0
  [runtime/child]=1
  [runtime/top]=2
)

# The part of `path` (a file, or an include's path) inside its folder: "" for a folder not
# layered inside.
part_of() {
  local path=$1 folder=${1%%/*}
  case "$folder" in
    dispatch)
      local rest=${path#dispatch/}
      if [[ "$rest" == */* ]]; then echo "dispatch/${rest%%/*}"; else echo "dispatch/top"; fi
      ;;
    runtime)
      case "$path" in
        runtime/child/*) echo "runtime/child" ;;
        runtime/spec.h | runtime/plan.h) echo "runtime/data" ;;
        *) echo "runtime/top" ;;
      esac
      ;;
    *) echo "" ;;
  esac
}

bad=0
checked=0
for folder in "${!layer[@]}"; do
  while IFS=: read -r file line text; do
    path=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$text")
    target=${path%%/*}
    [[ -n "${layer[$target]+x}" ]] || continue  # not one of ours (e.g. a system header)
    checked=$((checked + 1))
    if [[ "$target" != "$folder" ]]; then
      if [[ ${layer[$target]} -ge ${layer[$folder]} ]]; then
        echo "check-layers: $file:$line: $folder (layer ${layer[$folder]}) includes $target (layer ${layer[$target]})"
        bad=1
      fi
      continue
    fi
    from=$(part_of "$file")
    to=$(part_of "$path")
    [[ -n "$from" && "$from" != "$to" ]] || continue
    if [[ ${inner[$to]} -ge ${inner[$from]} ]]; then
      echo "check-layers: $file:$line: $from (inner layer ${inner[$from]}) includes $to (inner layer ${inner[$to]})"
      bad=1
    fi
  done < <(grep -rn --include='*.h' --include='*.cc' -E '^#include "[^"/]+/' "$folder" || true)
done
if [[ $bad -ne 0 ]]; then
  echo "check-layers: FAILED: includes must point down the layers: base < security, netns, relay < runtime, contract < dispatch, supervise < cli;" \
    "inside dispatch/: request, sys < plan < git < host, terminal < record, identity < dispatch.cc;" \
    "inside runtime/: spec.h, plan.h < child/ < the rest" >&2
  exit 1
fi
echo "check-layers: $checked includes across ${#layer[@]} folders follow the layers"
