#!/usr/bin/env bash
# The project's test command (README, .ci/run):
#   1. configure + build everything in build/ (RelWithDebInfo, warnings as errors); the
#      source checks: scripts/check-layers.sh, scripts/check-apparmor.sh, scripts/lint.sh
#   2. unit tests                      ctest -L 'unit|namespaces'
#   3. the unit tests again as the unprivileged user sbx-ci (scripts/unit-as-user.sh)
#   4. unit tests again under ASan+UBSan, built in build-asan/
#   5. the real agents (claude, opencode) from npm, for the agent tests of the matrix:
#      scripts/install-agents.sh into $SBX_AGENTS_DIR (default: its --default-dir); only an
#      unreachable npm registry lets those tests skip, and the summary says so loudly
#   6. the integration matrix          scripts/run_matrix.sh (backends from $SBX_BACKENDS,
#      default native, bwrap and system: the last runs the bwrap-face suite on /usr/bin/bwrap)
#   7. bubblewrap's own test scripts   scripts/bwrap-upstream-tests.sh (root and unprivileged)
#   8. fuzzers, each for a bounded time scripts/fuzz.sh (clang, build-fuzz/)
#   9. the .deb, installed and removed scripts/package-test.sh (from build/)
#  10. the skip budget: every skipped test of steps 2-7 must be listed, with its reason, in
#      .ci/expected-skips (scripts/check-skips.sh)
# Stops at the first failing step. $SBX_JOBS sets the build parallelism (default 2).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
jobs=${SBX_JOBS:-2}

step() { printf '\n### %s\n' "$*"; }

# Every skipped test of every tier, "TIER TEST" per line (scripts/record-skips.sh).
export SBX_SKIP_LOG=${SBX_SKIP_LOG:-$(mktemp /tmp/sbx-skips.XXXXXX)}
: >"$SBX_SKIP_LOG"
# ctest with its output kept for the skip log; $1: tier, rest: ctest arguments.
ctest_tier() {
  local tier=$1 log rc=0
  shift
  log=$(mktemp)
  ctest "$@" 2>&1 | tee "$log" || rc=$?
  scripts/record-skips.sh "$tier" "$log"
  rm -f "$log"
  return "$rc"
}

step "dependencies"
scripts/install-deps.sh --if-missing

step "layering (scripts/check-layers.sh)"
scripts/check-layers.sh

step "AppArmor profile (scripts/check-apparmor.sh)"
scripts/check-apparmor.sh

step "build (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSBX_BUILD_TESTS=ON -DSBX_BUILD_INTEGRATION=ON \
  -DSBX_ASAN=OFF -DSBX_UBSAN=OFF -DSBX_WERROR=ON
cmake --build build -j"$jobs"

if [[ ! -x build/ateam-sandbox || ! -x build/compat/bwrap ]]; then
  echo "test.sh: FAILED: build/ateam-sandbox or build/compat/bwrap was not built; the integration suite needs both" >&2
  echo "test.sh: (build/compat/bwrap is the command the suite tests by default)" >&2
  exit 1
fi

step "lint (scripts/lint.sh: clang-format, clang-tidy over build/compile_commands.json)"
scripts/lint.sh build

step "unit tests (build/)"
ctest_tier unit/root --test-dir build -L 'unit|namespaces' --no-tests=error --output-on-failure

step "unit tests as the unprivileged user (scripts/unit-as-user.sh)"
scripts/unit-as-user.sh build

step "unit tests under ASan+UBSan (build-asan/)"
# Only the unit tests: the integration suite runs the real binary in the matrix below.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSBX_ASAN=ON -DSBX_UBSAN=ON \
  -DSBX_BUILD_INTEGRATION=OFF -DSBX_BUILD_BENCH=OFF -DSBX_WERROR=ON
cmake --build build-asan -j"$jobs"
ctest_tier asan/root --test-dir build-asan -L 'unit|namespaces' --no-tests=error --output-on-failure

step "real agents from npm (scripts/install-agents.sh)"
SBX_AGENTS_DIR=${SBX_AGENTS_DIR:-$(scripts/install-agents.sh --default-dir)}
export SBX_AGENTS_DIR
agents_rc=0
scripts/install-agents.sh "$SBX_AGENTS_DIR" || agents_rc=$?
case $agents_rc in
  0) ;;
  3) export SBX_AGENTS_UNAVAILABLE="the npm registry could not be reached (see install-agents' SKIP line)" ;;
  *) echo "test.sh: FAILED: scripts/install-agents.sh exited $agents_rc" >&2; exit 1 ;;
esac

step "integration matrix"
SBX_BUILD_DIR="$repo/build" scripts/run_matrix.sh

step "bubblewrap's own tests (scripts/bwrap-upstream-tests.sh)"
# Debian's bubblewrap test scripts against build/compat/bwrap, root and unprivileged.
SBX_BUILD_DIR="$repo/build" scripts/bwrap-upstream-tests.sh

step "engine tier: containerd/runc and Podman container shapes, Slurm jobs (scripts/engine-tier.sh)"
scripts/engine-tier.sh build

step "fuzzers (scripts/fuzz.sh)"
scripts/fuzz.sh

step "package (scripts/package-test.sh, from build/)"
scripts/package-test.sh build

step "skip budget (scripts/check-skips.sh, .ci/expected-skips)"
scripts/check-skips.sh "$SBX_SKIP_LOG" .ci/expected-skips
