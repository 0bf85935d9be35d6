#!/usr/bin/env bash
# The project's test command (README, .ci/run). First, in order:
#   dependencies       scripts/install-deps.sh --if-missing
#   source checks      scripts/check-layers.sh, scripts/check-apparmor.sh
#   build              build/ (RelWithDebInfo, warnings as errors)
# Then four tracks side by side, each running its steps in order (the `track` lines below):
#   cpu    lint (scripts/lint.sh: clang-format, clang-tidy); the unit tests under
#          ASan+UBSan (build-asan/); the fuzzers, each for a bounded time (scripts/fuzz.sh)
#   root   the unit tests (ctest -L 'unit|namespaces'); the real agents from npm
#          (scripts/install-agents.sh into $SBX_AGENTS_DIR; only an unreachable registry lets
#          their tests skip, and the summary says so loudly); the integration matrix
#          (scripts/run_matrix.sh: backends $SBX_BACKENDS, default native, bwrap and system)
#   user   the unit tests as the unprivileged user sbx-ci (scripts/unit-as-user.sh);
#          bubblewrap's own test scripts, root and unprivileged (scripts/bwrap-upstream-tests.sh)
#   engines  ateam-sandbox under containerd/runc, Podman and Slurm (scripts/engine-tier.sh)
# The machine has two cores: the cpu track compiles and fuzzes, the others mostly wait on
# sandboxes starting and ending, so side by side the run takes about as long as its longest
# track instead of the sum. A new tier is one more `track` line. Each track writes its own
# log (in $SBX_TEST_LOGS, default a fresh /tmp/sbx-test.XXXXXX), printed whole when the
# track ends (removed after a run that passed, unless $SBX_TEST_LOGS names it); a failed
# step stops its track, the others finish, and the run fails with the failed track's last
# lines printed again at the end.
# Then, in order:
#   package            scripts/package-test.sh build (installs the .deb: alone, last)
#   skip budget        every skipped test must be listed, with its reason, in
#                      .ci/expected-skips (scripts/check-skips.sh)
#   leftovers          no process the run started is still running (scripts/check-leftovers.sh
#                      by the marker SBX_TEST_RUN that every process of the run inherits)
# Every step prints its time, and the run ends with the table of them. docs/packaging.md
# ("The test command") has the measured times and how to try this in a clean Debian 12 root.
# $SBX_JOBS sets the build parallelism (default 2). ccache is used when installed.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
jobs=${SBX_JOBS:-2}

# The run's marker (scripts/check-leftovers.sh), inherited by everything it starts.
SBX_TEST_RUN=test.$$.$(date +%s%N)
export SBX_TEST_RUN
logs=${SBX_TEST_LOGS:-$(mktemp -d /tmp/sbx-test.XXXXXX)}
mkdir -p "$logs"
: >"$logs/times"
# Every skipped test of every tier, "TIER TEST" per line (scripts/record-skips.sh, which
# appends under a lock: tracks record side by side).
export SBX_SKIP_LOG=${SBX_SKIP_LOG:-$logs/skips}
: >"$SBX_SKIP_LOG"
# The builds' compiler launcher: ccache once the dependencies step has installed it.
launcher=()

# Runs one step: its title, its command, its time (into $logs/times). Fails as it fails.
# $1: title, rest: the command (a function or a program). The command runs in a subshell
# with errexit on and outside any `||`, where bash would ignore errexit in functions.
step() {
  local title=$1 start=$SECONDS rc errexit=$-
  shift
  printf '\n### %s\n' "$title"
  set +e
  (
    set -e
    "$@"
  )
  rc=$?
  [[ $errexit != *e* ]] || set -e
  printf '%-8s %4d s  %s%s\n' "${track_name:-main}" $((SECONDS - start)) "$title" \
    "$([[ $rc -eq 0 ]] || echo "  (FAILED, exit $rc)")" >>"$logs/times"
  return "$rc"
}

# ---- The steps ----

# ctest with its output kept for the skip log; $1: tier, rest: ctest arguments.
ctest_tier() {
  local tier=$1 out rc=0
  shift
  out=$(mktemp "$logs/ctest.XXXXXX")
  ctest "$@" 2>&1 | tee "$out" || rc=$?
  scripts/record-skips.sh "$tier" "$out"
  rm -f "$out"
  return "$rc"
}

build_main() {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSBX_BUILD_TESTS=ON \
    -DSBX_BUILD_INTEGRATION=ON -DSBX_ASAN=OFF -DSBX_UBSAN=OFF -DSBX_WERROR=ON "${launcher[@]}"
  cmake --build build -j"$jobs"
  if [[ ! -x build/ateam-sandbox || ! -x build/compat/bwrap ]]; then
    echo "test.sh: FAILED: build/ateam-sandbox or build/compat/bwrap was not built; the integration suite needs both" >&2
    echo "test.sh: (build/compat/bwrap is the command the suite tests by default)" >&2
    return 1
  fi
}

unit_root() {
  ctest_tier unit/root --test-dir build -L 'unit|namespaces' --no-tests=error --output-on-failure
}

# Only the unit tests: the integration suite runs the real binary in the matrix.
asan_unit() {
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSBX_ASAN=ON -DSBX_UBSAN=ON \
    -DSBX_BUILD_INTEGRATION=OFF -DSBX_BUILD_BENCH=OFF -DSBX_WERROR=ON "${launcher[@]}"
  cmake --build build-asan -j"$jobs"
  ctest_tier asan/root --test-dir build-asan -L 'unit|namespaces' --no-tests=error --output-on-failure
}

# Exit 3 of install-agents: the registry is unreachable; the reason goes to check-skips.
real_agents() {
  local rc=0
  scripts/install-agents.sh "$SBX_AGENTS_DIR" || rc=$?
  case $rc in
    0) ;;
    3) echo "the npm registry could not be reached (see install-agents' SKIP line)" >"$logs/agents-unavailable" ;;
    *) echo "test.sh: FAILED: scripts/install-agents.sh exited $rc" >&2; return 1 ;;
  esac
}

matrix() { SBX_BUILD_DIR="$repo/build" scripts/run_matrix.sh; }

# Debian's bubblewrap test scripts against build/compat/bwrap, root and unprivileged.
bwrap_upstream() { SBX_BUILD_DIR="$repo/build" scripts/bwrap-upstream-tests.sh; }

skip_budget() {
  if [[ -s $logs/agents-unavailable ]]; then
    SBX_AGENTS_UNAVAILABLE=$(<"$logs/agents-unavailable")
    export SBX_AGENTS_UNAVAILABLE
  fi
  scripts/check-skips.sh "$SBX_SKIP_LOG" .ci/expected-skips
}

# ---- The tracks: TRACK TITLE COMMAND... (a step of a track starts when the one before ends) ----

declare -a plan=()
track() {
  local name=$1 title=$2
  shift 2
  plan+=("$name"$'\x1f'"$title"$'\x1f'"$(printf '%q ' "$@")")
}
track cpu "lint (scripts/lint.sh: clang-format, clang-tidy over build/compile_commands.json)" scripts/lint.sh build
track cpu "unit tests under ASan+UBSan (build-asan/)" asan_unit
track cpu "fuzzers (scripts/fuzz.sh)" scripts/fuzz.sh
track root "unit tests (build/)" unit_root
track root "real agents from npm (scripts/install-agents.sh)" real_agents
track root "integration matrix (scripts/run_matrix.sh)" matrix
track user "unit tests as the unprivileged user (scripts/unit-as-user.sh)" scripts/unit-as-user.sh build
track user "bubblewrap's own tests (scripts/bwrap-upstream-tests.sh)" bwrap_upstream
track engines "engine tier: containerd/runc and Podman container shapes, Slurm jobs (scripts/engine-tier.sh)" scripts/engine-tier.sh build
track engines "bench smoke: every bench once at its smallest counts, root and user (scripts/bench-smoke.sh)" scripts/bench-smoke.sh build

# Runs the steps of track $1 in order, in this subshell; stops at the first failure.
run_track() {
  local track_name=$1 entry name title command rc
  for entry in "${plan[@]}"; do
    IFS=$'\x1f' read -r name title command <<<"$entry"
    [[ $name == "$track_name" ]] || continue
    set +e
    eval "step \"\$title\" $command"
    rc=$?
    set -e
    if [[ $rc -ne 0 ]]; then
      echo "test.sh: FAILED: track $track_name: $title" >&2
      echo "$title" >"$logs/$track_name.failed"
      return 1
    fi
  done
}

# Starts every track at once, prints each one's log as it ends, fails if any failed.
run_tracks() {
  local -A pid_of=() started=()
  local entry name
  for entry in "${plan[@]}"; do
    name=${entry%%$'\x1f'*}
    [[ -n ${started[$name]:-} ]] && continue
    started[$name]=$SECONDS
    (run_track "$name") >"$logs/$name.log" 2>&1 &
    pid_of[$name]=$!
    echo "test.sh: track $name started (log: $logs/$name.log)"
  done
  local failed=() done_pid rc
  while [[ ${#pid_of[@]} -gt 0 ]]; do
    rc=0
    wait -n -p done_pid "${pid_of[@]}" || rc=$?
    for name in "${!pid_of[@]}"; do
      [[ ${pid_of[$name]} == "$done_pid" ]] || continue
      unset "pid_of[$name]"
      printf '\n######## track %s (%d s, %s) ########\n' "$name" $((SECONDS - started[$name])) \
        "$([[ $rc -eq 0 ]] && echo ok || echo FAILED)"
      cat "$logs/$name.log"
      [[ $rc -eq 0 ]] || failed+=("$name")
    done
  done
  if [[ ${#failed[@]} -gt 0 ]]; then
    for name in "${failed[@]}"; do
      printf '\n######## FAILED: track %s, step: %s; its last lines: ########\n' "$name" \
        "$(cat "$logs/$name.failed" 2>/dev/null || echo '?')"
      tail -n 80 "$logs/$name.log"
    done
    echo "test.sh: FAILED: tracks ${failed[*]} (whole logs above and in $logs)" >&2
    return 1
  fi
}

# Named and killed even when a step failed: what a failed run leaves must not pile up either.
leftovers_checked=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
finish() {
  local rc=$?
  trap - EXIT
  if [[ -z $leftovers_checked ]]; then
    scripts/check-leftovers.sh "SBX_TEST_RUN=$SBX_TEST_RUN" || rc=1
  fi
  printf '\n### step times (track, seconds, step)\n'
  cat "$logs/times"
  # Everything in them has been printed; a failed run keeps them for a closer look.
  if [[ $rc -eq 0 && -z ${SBX_TEST_LOGS:-} ]]; then rm -rf "$logs"; fi
  exit "$rc"
}
trap finish EXIT

step "dependencies" scripts/install-deps.sh --if-missing
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
step "layering (scripts/check-layers.sh)" scripts/check-layers.sh
step "AppArmor profile (scripts/check-apparmor.sh)" scripts/check-apparmor.sh
step "build (build/)" build_main

# Made once here: the unit and matrix tiers of two tracks would both create it.
scripts/ci-user.sh sbx-ci
SBX_AGENTS_DIR=${SBX_AGENTS_DIR:-$(scripts/install-agents.sh --default-dir)}
export SBX_AGENTS_DIR
step "side by side: tracks $(printf '%s\n' "${plan[@]}" | cut -d$'\x1f' -f1 | uniq | tr '\n' ' ')" run_tracks

step "package (scripts/package-test.sh, from build/)" scripts/package-test.sh build
step "skip budget (scripts/check-skips.sh, .ci/expected-skips)" skip_budget
leftovers_checked=yes
step "leftovers (scripts/check-leftovers.sh)" scripts/check-leftovers.sh "SBX_TEST_RUN=$SBX_TEST_RUN"
