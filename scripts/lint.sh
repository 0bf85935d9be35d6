#!/usr/bin/env bash
# The source checks of CI, both failing on any finding:
#   1. clang-format --dry-run -Werror over every .cc and .h of the tree (.clang-format)
#   2. clang-tidy (.clang-tidy) over every non-test source of the build, $SBX_JOBS at a time
#      (default 2), with the build's compile_commands.json
#   scripts/lint.sh [BUILD_DIR]      BUILD_DIR: a configured build (default build/)
# Fix formatting with clang-format -i on the files named. Called by scripts/test.sh.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
build=${1:-build}
jobs=${SBX_JOBS:-2}

# Tracked and new files alike; outside a git checkout, everything but the build trees.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t sources < <(git ls-files --cached --others --exclude-standard -- '*.cc' '*.h')
else
  mapfile -t sources < <(find . -path './build*' -prune -o -path ./.git -prune -o \
    \( -name '*.cc' -o -name '*.h' \) -type f -print | sed 's|^\./||' | sort)
fi

start=$SECONDS
if ! clang-format --dry-run -Werror "${sources[@]}"; then
  echo "lint: FAILED: clang-format: run clang-format -i on the files above" >&2
  exit 1
fi
echo "lint: clang-format: ${#sources[@]} files formatted ($((SECONDS - start))s)"

if [[ ! -f $build/compile_commands.json ]]; then
  echo "lint: FAILED: $build/compile_commands.json is missing: configure $build first" >&2
  exit 1
fi
# The non-test translation units of the build: tests/ and integration/ are test code.
mapfile -t units < <(python3 - "$build/compile_commands.json" "$repo" <<'PY'
import json, os, sys
repo = os.path.realpath(sys.argv[2])
seen = set()
for entry in json.load(open(sys.argv[1])):
    path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
    rel = os.path.relpath(path, repo)
    if rel.startswith("..") or rel.split(os.sep)[0] in ("tests", "integration"):
        continue
    if rel not in seen:
        seen.add(rel)
        print(rel)
PY
)
start=$SECONDS
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# One clang-tidy per unit; each keeps its report in its own file, so parallel runs do not
# interleave, and only reports with findings are shown.
printf '%s\n' "${units[@]}" | xargs -P "$jobs" -I{} sh -c \
  'clang-tidy -p "$1" --quiet --warnings-as-errors="*" "$2" >"$3/$(echo "$2" | tr / _).log" 2>&1 ||
   echo "$2" >>"$3/failed"' _ "$build" {} "$logs"
if [[ -s $logs/failed ]]; then
  while read -r unit; do
    grep -v -e '^[0-9]* warnings\? generated\.$' -e '^Suppressed [0-9]* warnings' \
      -e '^Use -header-filter' "$logs/$(echo "$unit" | tr / _).log" >&2 || true
  done <"$logs/failed"
  echo "lint: FAILED: clang-tidy reports findings in $(wc -l <"$logs/failed") of ${#units[@]} units" >&2
  exit 1
fi
echo "lint: clang-tidy: ${#units[@]} units clean ($((SECONDS - start))s)"
