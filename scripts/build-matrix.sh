#!/usr/bin/env bash
# build-matrix: builds the product and the unit tests (no integration suite, no benchmarks)
# with GCC and clang in every CMake build type, warnings as errors, one build directory
# each (build-matrix/COMPILER-TYPE), and prints one line per build. A build that passes with
# -Werror passes without it: the option only adds -Werror to the same flags.
#
#   scripts/build-matrix.sh [-j N] [COMPILER:TYPE ...]
#
# Default: gcc and clang x Debug, Release, RelWithDebInfo, MinSizeRel. Slow (each build is
# a full build; ccache helps when it is set up), so CI does not run it: run it before a
# release or after a compiler upgrade. Logs go to build-matrix/COMPILER-TYPE.log.
set -uo pipefail

jobs=2
if [[ ${1:-} == -j ]]; then
  jobs=$2
  shift 2
fi
combos=("$@")
if [[ ${#combos[@]} -eq 0 ]]; then
  for cc in gcc clang; do
    for type in Debug Release RelWithDebInfo MinSizeRel; do combos+=("$cc:$type"); done
  done
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

cd "$(dirname "$0")/.." || exit 2
mkdir -p build-matrix
failed=0
for combo in "${combos[@]}"; do
  cc=${combo%%:*}
  type=${combo#*:}
  case $cc in
    gcc) c=gcc cxx=g++ ;;
    clang) c=clang cxx=clang++ ;;
    *) echo "unknown compiler $cc (gcc or clang)" >&2; exit 2 ;;
  esac
  dir=build-matrix/$cc-$type
  start=$(date +%s)
  if CC=$c CXX=$cxx cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" -DSBX_WERROR=ON \
      -DSBX_BUILD_TESTS=ON -DSBX_BUILD_INTEGRATION=OFF -DSBX_BUILD_BENCH=OFF \
      "${launcher[@]}" >"$dir.log" 2>&1 &&
    cmake --build "$dir" -j "$jobs" >>"$dir.log" 2>&1; then
    result=ok
  else
    result="FAILED (see $dir.log)"
    failed=1
  fi
  echo "$cc $type -Werror: $result, $(($(date +%s) - start)) s"
done
exit $failed
