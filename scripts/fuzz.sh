#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang, ASan and UBSan in build-fuzz/ (the `fuzz`
# preset of CMakePresets.json), then runs each one for a bounded time, two at a time,
# starting from its seed corpus in fuzz/corpus/<name>/ (new inputs go to
# build-fuzz/corpus/<name>/; the repository is not touched). A crash, a leak or a failed check stops the script with the fuzzer's report;
# the input that caused it is in build-fuzz/artifacts/.
#   scripts/fuzz.sh [SECONDS]    seconds per fuzzer: $SBX_FUZZ_SECONDS, default 15
# $SBX_JOBS sets the build parallelism (default 2). Called by scripts/test.sh.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
seconds=${1:-${SBX_FUZZ_SECONDS:-15}}
jobs=${SBX_JOBS:-2}
build=build-fuzz

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# The `fuzz` preset: clang, ASan+UBSan, RelWithDebInfo, no tests, build-fuzz/.
cmake --preset fuzz "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$jobs" --target fuzzers

mkdir -p "$build/artifacts" "$build/logs"
run_one() {
  local exe=$1 seconds=$2 build=$3
  local name
  name=$(basename "$exe")
  mkdir -p "$build/corpus/$name"
  local seeds=()
  [[ -d fuzz/corpus/$name ]] && seeds=("fuzz/corpus/$name")
  if "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$name-" "$build/corpus/$name" "${seeds[@]}" \
    >"$build/logs/$name.log" 2>&1; then
    echo "fuzz: $name: $(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$build/logs/$name.log" |
      grep -o '[0-9]*$') runs in ${seconds}s, no finding"
  else
    echo "fuzz: $name: FAILED; its report:" >&2
    tail -n 60 "$build/logs/$name.log" >&2
    return 1
  fi
}
export -f run_one

fuzzers=("$build"/fuzz/*_fuzz)
if [[ ! -x ${fuzzers[0]} ]]; then
  echo "fuzz: FAILED: no fuzzer was built in $build/fuzz" >&2
  exit 1
fi
printf '%s\n' "${fuzzers[@]}" | xargs -P 2 -I{} bash -c 'run_one "$@"' _ {} "$seconds" "$build"
echo "fuzz: ${#fuzzers[@]} fuzzers, ${seconds}s each, no finding"
