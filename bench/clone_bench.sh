#!/usr/bin/env bash
# clone_bench: `ateam-sandbox run --repo R -- true` against a bare `git clone --no-hardlinks R`
# on a generated repository of ~13,000 files (a copy of /usr/include and /usr/share/doc in
# three commits). Pairs are interleaved, each timed step preceded by `sync`, and the order
# inside a pair alternates; prints every pair and the median of the per-pair ratios, of
# the elapsed time and of the CPU time.
#
#   bench/clone_bench.sh [--ateam PATH] [--pairs N] [--dir DIR] [--run-as USER]
#
# Run it as root (the sandbox and its clone run as --run-as, default the overflow ids) and
# as an unprivileged user. DIR (default /var/tmp) holds the repository and the clones; it
# must be a directory `run` accepts as a workspace root's parent.
set -euo pipefail

ateam=build/ateam-sandbox
pairs=9
dir=/var/tmp
run_as=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --ateam) ateam=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --run-as) run_as=(--run-as "$2"); shift 2 ;;
    *) echo "usage: $0 [--ateam PATH] [--pairs N] [--dir DIR] [--run-as USER]" >&2; exit 2 ;;
  esac
done
ateam=$(realpath "$ateam")

work=$(mktemp -d "$dir/clone-bench.XXXXXX")
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT
repo=$work/repo

# The repository: readable by everybody, so the sandbox's uid can clone it.
mkdir -p "$repo"
git -C "$repo" init -q
git() { command git -c user.name=bench -c user.email=bench@bench -c gc.auto=0 "$@"; }
cp -r /usr/include "$repo/include"
git -C "$repo" add -A && git -C "$repo" commit -qm "include"
cp -r /usr/share/doc "$repo/doc" 2>/dev/null || true
find "$repo/doc" -type l -delete
git -C "$repo" add -A && git -C "$repo" commit -qm "doc"
mapfile -t headers < <(find "$repo/include" -name '*.h')
for f in "${headers[@]:0:200}"; do echo "// bench" >>"$f"; done
git -C "$repo" add -A && git -C "$repo" commit -qm "touch"
git -C "$repo" gc -q
chmod -R a+rX "$repo"
files=$(git -C "$repo" ls-files | wc -l)
pack=$(du -sm "$repo/.git/objects" | cut -f1)
echo "repository: $files files, $pack MB of objects; $pairs pairs; caller uid $(id -u)"

# Each step prints "WALL CPU": elapsed seconds, and user+system seconds of it and every
# process it waited for (time spent waiting on the disk counts in the first only).
TIMEFORMAT='%R %U %S'
timed() {
  local out
  out=$({ time "$@" >/dev/null; } 2>&1 | tail -n 1)
  awk '{ printf "%.6f %.6f", $1, $2 + $3 }' <<<"$out"
}

bare_clone() {
  local dest=$work/bare.$1
  sync
  timed command git clone -q --no-hardlinks "$repo" "$dest"
  rm -rf "$dest"
}

run_clone() {
  local root=$work/roots.$1
  sync
  timed "$ateam" run "${run_as[@]}" --repo "$repo" --workspace-root "$root" -- true
  rm -rf "$root"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

ratios=()
cpu_ratios=()
for ((i = 0; i < pairs; i++)); do
  if ((i % 2 == 0)); then
    b=$(bare_clone "$i"); r=$(run_clone "$i")
  else
    r=$(run_clone "$i"); b=$(bare_clone "$i")
  fi
  read -r bw bc <<<"$b"
  read -r rw rc <<<"$r"
  ratio=$(awk -v r="$rw" -v b="$bw" 'BEGIN { printf "%.6f", r / b }')
  cpu_ratio=$(awk -v r="$rc" -v b="$bc" 'BEGIN { printf "%.6f", r / b }')
  ratios+=("$ratio")
  cpu_ratios+=("$cpu_ratio")
  printf 'pair %2d: git clone %.3f s (cpu %.3f s), run --repo %.3f s (cpu %.3f s), ratio %.3f (cpu %.3f)\n' \
    "$i" "$bw" "$bc" "$rw" "$rc" "$ratio" "$cpu_ratio"
done
printf 'median ratio run/git: %.3f (cpu %.3f)\n' "$(printf '%s\n' "${ratios[@]}" | median)" \
  "$(printf '%s\n' "${cpu_ratios[@]}" | median)"
