#!/usr/bin/env bash
# The project's test command (README, .ci/run):
#   1. configure + build everything in build/ (RelWithDebInfo, warnings as errors); the
#      source checks: scripts/check-layers.sh, scripts/check-apparmor.sh, scripts/lint.sh
#   2. unit tests                      ctest -L unit
#   3. unit tests again under ASan+UBSan, built in build-asan/
#   4. the real agents (claude, opencode) from npm, for the agent tests of the matrix:
#      scripts/install-agents.sh into $SBX_AGENTS_DIR (default: its --default-dir); when the
#      npm registry cannot be reached it says SKIP and those tests skip
#   5. the integration matrix          scripts/run_matrix.sh (backends from $SBX_BACKENDS)
#   6. fuzzers, each for a bounded time scripts/fuzz.sh (clang, build-fuzz/)
#   7. the .deb, installed and removed scripts/package-test.sh (build-package/)
# Stops at the first failing step. $SBX_JOBS sets the build parallelism (default 2).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
jobs=${SBX_JOBS:-2}

step() { printf '\n### %s\n' "$*"; }

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

if [[ ! -x build/ateam-sandbox ]]; then
  echo "test.sh: FAILED: build/ateam-sandbox was not built; the integration suite needs it" >&2
  echo "test.sh: (its build/compat/bwrap symlink is the command the suite tests by default)" >&2
  exit 1
fi

step "lint (scripts/lint.sh: clang-format, clang-tidy over build/compile_commands.json)"
scripts/lint.sh build

step "unit tests (build/)"
ctest --test-dir build -L unit --no-tests=error --output-on-failure

step "unit tests under ASan+UBSan (build-asan/)"
# Only the unit tests: the integration suite runs the real binary in the matrix below.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSBX_ASAN=ON -DSBX_UBSAN=ON \
  -DSBX_BUILD_INTEGRATION=OFF -DSBX_BUILD_BENCH=OFF -DSBX_WERROR=ON
cmake --build build-asan -j"$jobs"
ctest --test-dir build-asan -L unit --no-tests=error --output-on-failure

step "real agents from npm (scripts/install-agents.sh)"
SBX_AGENTS_DIR=${SBX_AGENTS_DIR:-$(scripts/install-agents.sh --default-dir)}
export SBX_AGENTS_DIR
scripts/install-agents.sh "$SBX_AGENTS_DIR"

step "integration matrix"
SBX_BUILD_DIR="$repo/build" scripts/run_matrix.sh

step "fuzzers (scripts/fuzz.sh)"
scripts/fuzz.sh

step "package (scripts/package-test.sh, from build/)"
scripts/package-test.sh build
