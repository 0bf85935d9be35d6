#!/usr/bin/env bash
# Fails on any skipped test that the expected list does not name:
#   scripts/check-skips.sh SKIP_LOG EXPECTED
# SKIP_LOG: "TIER TEST" lines from scripts/record-skips.sh. EXPECTED: ".ci/expected-skips",
# lines "TIER-GLOB TEST-GLOB  reason" (shell globs; '#' starts a comment). A test that may
# skip on CI's machine is listed there with its reason; any other skip means a tier ran
# less than it claims (e.g. an unprivileged caller without user namespaces) and fails CI.
# $SBX_AGENTS_UNAVAILABLE (set by scripts/test.sh when the npm registry cannot be reached)
# additionally allows the real-agent tests to skip, and says so loudly.
set -euo pipefail
log=$1
expected=$2
[[ -f "$log" ]] || { echo "check-skips: no skip log $log" >&2; exit 1; }

declare -a tier_globs=() test_globs=()
while read -r tier test _; do
  [[ -z "$tier" || "$tier" == \#* ]] && continue
  tier_globs+=("$tier")
  test_globs+=("$test")
done <"$expected"

unexpected=0
allowed=0
agents=0
while read -r tier test; do
  [[ -z "$tier" ]] && continue
  ok=0
  for i in "${!tier_globs[@]}"; do
    # shellcheck disable=SC2053  # the right-hand sides are globs on purpose
    if [[ "$tier" == ${tier_globs[$i]} && "$test" == ${test_globs[$i]} ]]; then
      ok=1
      break
    fi
  done
  if [[ $ok -eq 0 && -n "${SBX_AGENTS_UNAVAILABLE:-}" && "$test" == *Agent* ]]; then
    agents=$((agents + 1))
    continue
  fi
  if [[ $ok -eq 1 ]]; then
    allowed=$((allowed + 1))
  else
    echo "check-skips: UNEXPECTED SKIP: $tier $test"
    unexpected=$((unexpected + 1))
  fi
done <"$log"

if [[ $agents -gt 0 ]]; then
  echo "check-skips: ##################################################################"
  echo "check-skips: $agents real-agent tests SKIPPED: $SBX_AGENTS_UNAVAILABLE"
  echo "check-skips: ##################################################################"
fi
if [[ $unexpected -gt 0 ]]; then
  echo "check-skips: FAILED: $unexpected unexpected skips (allowed ones are listed in $expected)" >&2
  exit 1
fi
echo "check-skips: $allowed skips, all expected on this machine ($expected)"
