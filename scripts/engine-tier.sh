#!/usr/bin/env bash
# The engine tier: ateam-sandbox under the engines that run it on a fleet, started and
# stopped here (docs/fleet.md says what each shape needs and shows the snippets it runs):
#   1. the snippets of docs/fleet.md are the files the tier runs (integration/engines/check-doc.sh)
#   2. containerd + runc, four pod shapes (integration/engines/containerd-tier.sh)
#   3. Podman with Docker's flags, three shapes (integration/engines/podman-tier.sh)
#   4. a one-node Slurm cluster, dispatches as batch jobs (integration/engines/slurm-tier.sh)
#   scripts/engine-tier.sh [BUILD_DIR]     (default: $SBX_BUILD_DIR or <repo>/build)
# Runs as root. A part this machine cannot run (no root, an engine not installed: exit 77 of
# its script) is skipped loudly and recorded in $SBX_SKIP_LOG as "engines/root EngineTier.PART"
# (engines/user when not started as root),
# which scripts/check-skips.sh fails unless .ci/expected-skips allows it. Its work
# directories go at the end, also on failure (SBX_ENGINE_KEEP=1 keeps them).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-${SBX_BUILD_DIR:-$repo/build}}" && pwd)
engines="$repo/integration/engines"

work=$(mktemp -d /var/tmp/sbx-engines.XXXXXX)
chmod 0755 "$work"
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if [[ -n "${SBX_ENGINE_KEEP:-}" ]]; then
    echo "engine-tier: kept $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

failed=()
tier=engines/root
[[ $(id -u) -eq 0 ]] || tier=engines/user
# Runs part $1 (a script of integration/engines/ and its arguments) and records its outcome.
part() {
  local name=$1 start rc=0
  shift
  start=$(date +%s)
  echo
  echo "=== engine tier: $name ==="
  "$@" || rc=$?
  case $rc in
    0) echo "engine-tier: $name passed ($(($(date +%s) - start)) s)" ;;
    77)
      echo "engine-tier: ##########################################################"
      echo "engine-tier: $name SKIPPED on this machine (see its SKIP line above)"
      echo "engine-tier: ##########################################################"
      if [[ -n "${SBX_SKIP_LOG:-}" ]]; then echo "$tier EngineTier.$name" >>"$SBX_SKIP_LOG"; fi
      ;;
    *) echo "engine-tier: $name FAILED (exit $rc)"; failed+=("$name") ;;
  esac
}

part Snippets "$engines/check-doc.sh" "$repo/docs/fleet.md"
part Containerd "$engines/containerd-tier.sh" "$build" "$work/containerd"
part Podman "$engines/podman-tier.sh" "$build" "$work/podman"
part Slurm "$engines/slurm-tier.sh" "$build" "$work/slurm"

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "engine-tier: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "engine-tier: every part passed or was skipped loudly"
