#!/usr/bin/env bash
# Appends the tests a run skipped to the skip log, one "TIER TEST" line each:
#   scripts/record-skips.sh TIER LOGFILE
# LOGFILE is ctest output ("  12 - Suite.Name (Skipped)") or GoogleTest output
# ("[  SKIPPED ] Suite.Name"). The skip log is $SBX_SKIP_LOG; without it nothing is written.
# scripts/check-skips.sh compares the log with the skips CI expects (.ci/expected-skips).
set -euo pipefail
tier=$1
log=$2
# Tiers that run side by side (scripts/test.sh) append to one log: the lines are gathered
# first, then appended under an exclusive lock on the log, so no two tiers' lines interleave.
[[ -n "${SBX_SKIP_LOG:-}" ]] || exit 0
lines=$({
  sed -nE 's/^[[:space:]]*[0-9]+ - ([^ ]+) \(Skipped\)$/\1/p' "$log"
  sed -nE 's/^\[  SKIPPED \] ([A-Za-z0-9_/]+\.[A-Za-z0-9_/.]+)( .*)?$/\1/p' "$log"
} | sort -u | sed "s|^|$tier |")
[[ -n $lines ]] || exit 0
# shellcheck disable=SC2016  # $1 and $2 are the inner shell's
flock "$SBX_SKIP_LOG" sh -c 'printf "%s\n" "$1" >>"$2"' sh "$lines" "$SBX_SKIP_LOG"
