#!/usr/bin/env bash
# Runs the integration suite (ctest -L integration) for every backend x caller:
#   callers:  root, then an unprivileged user ($SBX_CI_USER, default sbx-ci; created if
#             missing). Not started as root: only the current user's run.
#   backends: $SBX_BACKENDS, blank-separated, default "native bwrap system":
#               native  SBX_BWRAP=<build>/compat/bwrap
#               bwrap   SBX_BWRAP="<build>/ateam-sandbox bwrap --backend bwrap"
#               system  SBX_BWRAP=/usr/bin/bwrap: the real bwrap parses the same argv, so
#                       the suite's expectations are checked against bwrap itself (a
#                       parser bug of ours that the other two tiers share shows up here).
#                       Only integration_test (ctest -L bwrap-face) runs in this tier:
#                       run_test drives `ateam-sandbox run`, whose bwrap backend already
#                       hands the real bwrap the argv it renders in the bwrap tier.
#                       The tier costs about 30 s a caller on the 2-core CI machine.
# The build dir is $SBX_BUILD_DIR (default <repo>/build) and must already hold
# integration_test and the probe. The unprivileged caller runs copies of the binaries in a
# world-readable temporary directory with a generated CTestTestfile.cmake, so nothing on
# the path to the build dir needs opening up (nor writing: ctest keeps its logs there).
# $SBX_AGENTS_DIR (the prefix scripts/install-agents.sh installed claude and opencode into)
# is passed to every tier; without it run_test's agent tests skip.
# Ends with scripts/check-leftovers.sh: every process the tiers started carries the
# marker SBX_MATRIX_RUN in its environment (or the staging directory in its command line),
# and one still running after the last tier fails the matrix, named and killed.
# Exits non-zero if any run fails.
set -euo pipefail
SBX_MATRIX_RUN=matrix.$$.$(date +%s%N)
export SBX_MATRIX_RUN

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${SBX_BUILD_DIR:-$repo/build}" && pwd)
backends=${SBX_BACKENDS:-native bwrap system}
ci_user=${SBX_CI_USER:-sbx-ci}
suite="$build/integration/integration_test"
probe="$build/integration/probe"

die() {
  echo "run_matrix: $*" >&2
  exit 1
}

[[ -x "$suite" ]] || die "$suite not built (cmake --build $build --target integration_test)"
[[ -x "$probe" ]] || die "$probe not built (cmake --build $build --target sbx_probe)"

# The bwrap-compatible command prefix for backend $1, with binaries under directory $2.
prefix_for() {
  case "$1" in
    native) echo "$2/compat/bwrap" ;;
    bwrap) echo "$2/ateam-sandbox bwrap --backend bwrap" ;;
    system) echo "/usr/bin/bwrap" ;;
    *) die "unknown backend '$1' (expected native, bwrap or system)" ;;
  esac
}

check_backend() {
  local cmd
  cmd=$(prefix_for "$1" "$build")
  cmd=${cmd%% *}
  [[ -x "$cmd" ]] || die "backend $1: $cmd does not exist or is not executable (build the ateam-sandbox and bwrap targets first)"
}

ensure_user() {
  "$repo/scripts/ci-user.sh" "$ci_user"
}

# Copies what the unprivileged user needs into a fresh world-readable directory and writes
# a CTestTestfile.cmake there registering each test like gtest_discover_tests does.
stage_for_user() {
  local stage
  stage=$(mktemp -d /tmp/sbx-matrix.XXXXXX)
  chmod 0755 "$stage"
  install -m 0755 "$suite" "$stage/integration_test"
  install -m 0755 "$probe" "$stage/probe"
  local extra
  for extra in parity/parity_test run/run_test run/run_netclient run/run_limits_probe; do
    if [[ -x "$build/integration/$extra" ]]; then
      install -m 0755 "$build/integration/$extra" "$stage/$(basename "$extra")"
    fi
  done
  if [[ -x "$build/ateam-sandbox" ]]; then
    install -m 0755 "$build/ateam-sandbox" "$stage/ateam-sandbox"
  fi
  if [[ -x "$build/compat/bwrap" ]]; then
    mkdir -p "$stage/compat"
    install -m 0755 "$build/compat/bwrap" "$stage/compat/bwrap"
  fi
  # Each staged suite's tests, registered as gtest_discover_tests would, with its label.
  local exe label
  for exe in integration_test parity_test run_test; do
    [[ -x "$stage/$exe" ]] || continue
    label=integration
    [[ $exe == parity_test ]] && label=parity
    [[ $exe == integration_test ]] && label=integration-bwrap-face  # as integration/CMakeLists.txt
    "$stage/$exe" --gtest_list_tests |
      awk -v exe="$stage/$exe" -v label="$label" '
        /^[^ ]/ { suite = $1; next }
        /^  /   { name = suite $1
                  printf "add_test([=[%s]=] \"%s\" \"--gtest_filter=%s\")\n", name, exe, name
                  printf "set_tests_properties([=[%s]=] PROPERTIES LABELS %s TIMEOUT 300 SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==])\n", name, label }
      ' >>"$stage/CTestTestfile.cmake"
  done
  if [[ $(id -u) -eq 0 ]]; then
    chown -R "$ci_user:" "$stage"
  fi
  echo "$stage"
}

declare -a summary=()
total_passed=0
total_failed=0
total_skipped=0
overall=0

# Runs ctest, keeps its output (and closing line) visible, and records the counts and
# (scripts/record-skips.sh, into $SBX_SKIP_LOG) the skipped tests.
# $1: tier key for the skip log (BACKEND/CALLER); $2: label for the summary; rest: the command.
run_tier() {
  local key=$1 label=$2
  shift 2
  local log start=$SECONDS
  log=$(mktemp)
  echo
  echo "=== integration: $label ==="
  set +e
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  set -e
  label="$label ($((SECONDS - start)) s)"
  local total failed skipped closing
  closing=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n1 || true)
  total=$(sed -nE 's/.* out of ([0-9]+)$/\1/p' <<<"$closing")
  failed=$(sed -nE 's/.* ([0-9]+) tests? failed.*/\1/p' <<<"$closing")
  skipped=$(grep -cE '\(Skipped\)$' "$log" || true)
  "$repo/scripts/record-skips.sh" "$key" "$log"
  # ctest's own list of the failed tests ("  12 - Suite.Name (Failed)"), so the summary
  # names them: CI keeps only the end of a long log.
  local failures
  failures=$(sed -n '/^The following tests FAILED:/,/^[^[:space:]]/s/^[[:space:]]\+[0-9]\+ - //p' "$log" |
    tr '\n' ';' | sed 's/;$//; s/;/; /g')
  rm -f "$log"
  if [[ -z "$total" ]]; then
    summary+=("FAIL  $label: ctest printed no result (exit $rc)")
    overall=1
    total_failed=$((total_failed + 1))
    return
  fi
  local passed=$((total - failed - skipped))
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  total_skipped=$((total_skipped + skipped))
  if [[ $rc -ne 0 || $failed -ne 0 || $total -eq 0 ]]; then
    summary+=("FAIL  $label: $passed passed, $failed failed, $skipped skipped (exit $rc)")
    if [[ -n "$failures" ]]; then summary+=("        failed: $failures"); fi
    overall=1
  else
    summary+=("ok    $label: $passed passed, $failed failed, $skipped skipped")
  fi
}

for backend in $backends; do
  check_backend "$backend"
done
agents_dir=${SBX_AGENTS_DIR:-}
if [[ -z "$agents_dir" ]]; then
  echo "run_matrix: SBX_AGENTS_DIR is not set: the real-agent tests (claude, opencode) will SKIP" >&2
elif [[ ! -x "$agents_dir/node_modules/.bin/claude" ]]; then
  echo "run_matrix: no agents in $agents_dir (install skipped?): the real-agent tests will SKIP" >&2
fi

stage=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  if [[ -n "$stage" ]]; then
    rm -rf "$stage"
  fi
}
trap cleanup EXIT

if [[ $(id -u) -eq 0 ]]; then
  ensure_user
fi
stage=$(stage_for_user)

for backend in $backends; do
  # The ctest label of the suites this backend runs (see the header).
  suites=integration
  [[ $backend == system ]] && suites=bwrap-face
  if [[ $(id -u) -eq 0 ]]; then
    run_tier "$backend/root" "$backend backend, caller root" \
      env SBX_BWRAP="$(prefix_for "$backend" "$build")" SBX_PROBE="$probe" \
      SBX_RUN_BACKEND="$backend" SBX_AGENTS_DIR="$agents_dir" \
      ctest --test-dir "$build" -L "$suites" -E ParityTest --no-tests=error --output-on-failure
    run_tier "$backend/user" "$backend backend, caller $ci_user (uid $(id -u "$ci_user"))" \
      runuser -u "$ci_user" -- env -C "$stage" TMPDIR=/tmp \
      SBX_BWRAP="$(prefix_for "$backend" "$stage")" SBX_PROBE="$stage/probe" \
      SBX_ATEAM="$stage/ateam-sandbox" SBX_RUN_BACKEND="$backend" \
      SBX_RUN_NETCLIENT="$stage/run_netclient" SBX_AGENTS_DIR="$agents_dir" \
      ctest --test-dir "$stage" -L "$suites" --no-tests=error --output-on-failure
  else
    echo "run_matrix: not root: running only as $(id -un); the root tier is not covered" >&2
    run_tier "$backend/user" "$backend backend, caller $(id -un) (uid $(id -u))" \
      env -C "$stage" SBX_BWRAP="$(prefix_for "$backend" "$stage")" SBX_PROBE="$stage/probe" \
      SBX_AGENTS_DIR="$agents_dir" \
      ctest --test-dir "$stage" -L "$suites" --no-tests=error --output-on-failure
  fi
done

# The parity matrix runs both backends itself, once per caller.
if [[ -x "$build/integration/parity/parity_test" ]]; then
  if [[ $(id -u) -eq 0 ]]; then
    run_tier parity/root "parity matrix (native vs bwrap backend), caller root" \
      env SBX_PROBE="$probe" \
      ctest --test-dir "$build" -R ParityTest --no-tests=error --output-on-failure
    run_tier parity/user "parity matrix (native vs bwrap backend), caller $ci_user" \
      runuser -u "$ci_user" -- env -C "$stage" TMPDIR=/tmp SBX_PROBE="$stage/probe" \
      SBX_PARITY_NATIVE="$stage/compat/bwrap" \
      SBX_PARITY_BWRAP="$stage/ateam-sandbox bwrap --backend bwrap" \
      ctest --test-dir "$stage" -L parity --no-tests=error --output-on-failure
  fi
fi

leftovers=ok
"$repo/scripts/check-leftovers.sh" "SBX_MATRIX_RUN=$SBX_MATRIX_RUN" "$stage" || leftovers=FAIL

echo
echo "=== integration matrix summary ==="
printf '%s\n' "${summary[@]}"
if [[ $leftovers == FAIL ]]; then
  echo "FAIL  processes of the matrix were left running (check-leftovers above)"
  overall=1
fi
echo "integration: $total_passed passed, $total_failed failed, $total_skipped skipped"
exit "$overall"
