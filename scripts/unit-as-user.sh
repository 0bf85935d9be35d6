#!/usr/bin/env bash
# Runs every unit-test executable of a build as an unprivileged user, the runtime's main
# kind of caller (as root, scripts/test.sh runs them through ctest):
#   scripts/unit-as-user.sh BUILD_DIR [USER]     (USER default $SBX_CI_USER or sbx-ci)
# The executables run from a world-readable staged copy, so nothing on the path to the
# build dir needs opening up. Skips are recorded (scripts/record-skips.sh, tier
# "unit/user"). Exits non-zero when any test fails.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "$1" && pwd)
user=${2:-${SBX_CI_USER:-sbx-ci}}
[[ $(id -u) -eq 0 ]] || { echo "unit-as-user: must start as root (runuser)" >&2; exit 1; }
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"

stage=$(mktemp -d /tmp/sbx-unit.XXXXXX)
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
mapfile -t exes < <(find "$build/tests" -type f -perm -u+x -name '*_test' | sort)
[[ ${#exes[@]} -gt 0 ]] || { echo "unit-as-user: no test executables under $build/tests" >&2; exit 1; }
for exe in "${exes[@]}"; do install -m 0755 "$exe" "$stage/"; done
client=$(find "$build/tests" -type f -perm -u+x -name supervise_tunnel_client | head -n1)
[[ -n "$client" ]] && install -m 0755 "$client" "$stage/"

failed=0
passed=0
for exe in "${exes[@]}"; do
  name=$(basename "$exe")
  log="$stage/$name.log"
  set +e
  runuser -u "$user" -- env -C "$stage" TMPDIR=/tmp SBX_TUNNEL_CLIENT="$stage/supervise_tunnel_client" \
    "$stage/$name" >"$log" 2>&1
  rc=$?
  set -e
  "$repo/scripts/record-skips.sh" unit/user "$log"
  summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "$log" | tr '\n' ' ')
  if [[ $rc -ne 0 ]]; then
    cat "$log"
    echo "unit-as-user: FAIL $name (exit $rc): $summary"
    failed=$((failed + 1))
  else
    echo "unit-as-user: ok   $name: $summary"
    passed=$((passed + 1))
  fi
done
echo "unit-as-user ($user): $passed executables passed, $failed failed"
[[ $failed -eq 0 ]]
