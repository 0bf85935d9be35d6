#!/usr/bin/env bash
# Checks that the snippets of docs/fleet.md are the files the engine tier runs:
#   integration/engines/check-doc.sh docs/fleet.md
# A snippet is marked in the doc by a line `<!-- snippet: PATH -->` (PATH from the
# repository's top) right before a fenced block; the block must equal the file, and every
# file of integration/engines/{oci,slurm,k8s,podman}/ must be shown. The Job of k8s/ must give its
# container the shape the tier runs for a user-namespaced pod (k8s-shape.py: userns).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
doc=$1
failed=0
mapfile -t files < <(cd "$repo" && ls integration/engines/oci/* integration/engines/slurm/* integration/engines/k8s/* integration/engines/podman/*)
for file in "${files[@]}"; do
  block=$(awk -v marker="<!-- snippet: $file -->" '
    $0 == marker { want = 1; next }
    want && /^```/ { if (inside) exit; inside = 1; next }
    inside { print }' "$doc")
  if [[ -z $block ]]; then
    echo "check-doc: $doc shows no snippet of $file"
    failed=1
  elif ! diff -u "$repo/$file" <(printf '%s\n' "$block") >/dev/null; then
    echo "check-doc: $doc's snippet of $file differs from the file:"
    diff -u "$repo/$file" <(printf '%s\n' "$block") || true
    failed=1
  fi
done
job_shape=$("$repo/integration/engines/k8s-shape.py" "$repo/integration/engines/k8s/dispatch-job.yaml") || failed=1
if [[ $job_shape != "dispatch: userns" ]]; then
  echo "check-doc: k8s/dispatch-job.yaml gives '$job_shape', not the tier's userns shape"
  failed=1
fi
[[ $failed -eq 0 ]] && echo "check-doc: ${#files[@]} snippets of $doc equal the files the tier runs"
exit "$failed"
