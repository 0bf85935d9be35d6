#!/usr/bin/env bash
# disk_bound_bench: how far past --disk and --inodes a fast writer gets before the disk
# watcher stops its dispatch, and what the watcher costs.
#
#   bench/disk_bound_bench.sh [--ateam PATH] [--dir DIR] [--runs N]
#
# Writers (each ends in `sleep 600`, so only the watcher ends it before --timeout):
#   big     dd of zeros, 64 MiB files one after another, under --disk 256m
#   small   `xargs touch` of 200,000 empty files, under --inodes 10000
# For each run it prints the exit code, the reason and what the workspace grew by (du's
# allocated bytes and its number of names, less the fresh clone's).
# Cost: the CPU the watcher takes while the agent runs, in a given workspace of 0 and of
# 100,000 files (below).
# DIR (default /var/tmp) holds the source repository and the dispatches.
set -euo pipefail

ateam=build/ateam-sandbox
dir=/var/tmp
runs=3
while [[ $# -gt 0 ]]; do
  case $1 in
    --ateam) ateam=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: $0 [--ateam PATH] [--dir DIR] [--runs N]" >&2; exit 2 ;;
  esac
done
ateam=$(realpath "$ateam")
work=$(mktemp -d "$dir/disk-bench.XXXXXX")
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT
git() { command git -c user.name=bench -c user.email=bench@bench "$@"; }
git init -q "$work/repo" && git -C "$work/repo" commit -q --allow-empty -m empty

# The growth of the workspace of the dispatch in status file $1 over a fresh clone's.
growth() {
  local ws
  ws=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["workspace"])' "$1")
  local bytes names
  bytes=$(du -s --block-size=1 "$ws" | cut -f1)
  names=$(find "$ws" -mindepth 1 | wc -l)
  echo "$((bytes - base_bytes)) bytes, $((names - base_names)) names"
}

status=$work/status.json
"$ateam" run --repo "$work/repo" --workspace-root "$work/d" --no-default-allow \
  --status-json "$status" -- true
ws=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["workspace"])' "$status")
base_bytes=$(du -s --block-size=1 "$ws" | cut -f1)
base_names=$(find "$ws" -mindepth 1 | wc -l)

declare -A limit=([big]="--disk 256m" [small]="--inodes 10000")
declare -A script=(
  [big]='i=0; while :; do dd if=/dev/zero of=f$i bs=1M count=64 2>/dev/null; i=$((i+1)); done'
  [small]='seq -f f%.0f 1 200000 | xargs touch; sleep 600')
for writer in big small; do
  for ((n = 1; n <= runs; n++)); do
    code=0
    # shellcheck disable=SC2086
    "$ateam" run --repo "$work/repo" --workspace-root "$work/d" --no-default-allow \
      --timeout 300 --grace 1 ${limit[$writer]} --status-json "$status" \
      -- /bin/sh -c "${script[$writer]}" 2>/dev/null || code=$?
    reason=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["reason"])' "$status")
    echo "$writer (${limit[$writer]}): exit $code, reason $reason, grew by $(growth "$status")"
  done
done

# The watcher's cost: run's CPU time (user+sys, children included) for an agent that sleeps
# 1 s and one that sleeps 11 s in the same given workspace of N files; the difference over
# 10 s is what the watcher takes while the agent runs (the walks before and after, the git
# guard's and, for root, the lending of the workspace are in both and cancel out).
cpu_of_sleep() {
  /usr/bin/time -f "%U %S" -o "$work/time" "$ateam" run --workspace "$1" --out "$2" \
    --no-default-allow -- sleep "$3"
  python3 -c "import sys; u, s = open(sys.argv[1]).read().split(); print(float(u) + float(s))" \
    "$work/time"
}
for files in 0 100000; do
  ws=$work/ws$files
  mkdir -p "$ws" "$work/out$files"
  (cd "$ws" && git init -q && if ((files > 0)); then seq -f f%.0f 1 "$files" | xargs touch; fi)
  chmod -R a+rwX "$ws" "$work/out$files"
  short=$(cpu_of_sleep "$ws" "$work/out$files" 1)
  long=$(cpu_of_sleep "$ws" "$work/out$files" 11)
  echo "watcher cost, $files files: $(python3 -c "print(f'{($long - $short) / 10 * 100:.1f}')")% of a CPU ($short s CPU for 1 s, $long s for 11 s)"
done
