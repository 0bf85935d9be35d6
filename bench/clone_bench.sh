#!/usr/bin/env bash
# clone_bench: `ateam-sandbox run --repo R -- true` against a bare `git clone --no-hardlinks R`
# on a generated repository. Pairs are interleaved, each timed step preceded by `sync`, and
# the order inside a pair alternates; prints every pair and the median of the per-pair
# ratios, of the elapsed time and of the CPU time.
#
#   bench/clone_bench.sh [--ateam PATH] [--pairs N] [--dir DIR] [--run-as USER]
#                        [--history COMMITS] [--cached] [--concurrent N] [--remove-each]
#
# The repository: by default ~13,000 files (a copy of /usr/include and /usr/share/doc in
# three commits); with --history COMMITS one heavy in history instead, COMMITS commits (the
# issue's size is 60000) each writing 4 KiB of random bytes into one of 500 files, made with
# git fast-import (2000 makes a quick run). --cached: `run` with --object-cache; one dispatch
# before the pairs fills the cache (timed apart: the cold dispatch), so the pairs measure a
# warm cache, and one dispatch's workspace is weighed against its checked-out files.
# --concurrent N: then N dispatches at once from the repository, the time until all ended.
#
# Every clone and dispatch stays until the end: ext4 passes over the inodes freed in the last
# seconds when it allocates one (recently_deleted), so files made right after a removal of
# thousands cost several times more, and a removal between the steps would charge one step
# for the one before. --remove-each removes each step's directory right after it instead.
#
# Run it as root (the sandbox and its clone run as --run-as, default the overflow ids) and
# as an unprivileged user. DIR (default /var/tmp) holds the repository and the clones; it
# must be a directory `run` accepts as a workspace root's parent.
set -euo pipefail

ateam=build/ateam-sandbox
pairs=9
dir=/var/tmp
run_as=()
history=0
cached=()
concurrent=0
remove_each=0
usage="usage: $0 [--ateam PATH] [--pairs N] [--dir DIR] [--run-as USER] [--history COMMITS]"
usage+=" [--cached] [--concurrent N] [--remove-each]"
while [[ $# -gt 0 ]]; do
  case $1 in
    --ateam) ateam=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --run-as) run_as=(--run-as "$2"); shift 2 ;;
    --history) history=$2; shift 2 ;;
    --cached) cached=(--object-cache); shift ;;
    --concurrent) concurrent=$2; shift 2 ;;
    --remove-each) remove_each=1; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
ateam=$(realpath "$ateam")

work=$(mktemp -d "$dir/clone-bench.XXXXXX")
chmod 0755 "$work"
trap 'rm -rf "$work"' EXIT
repo=$work/repo

# The repository: readable by everybody, so the sandbox's uid can clone it.
mkdir -p "$repo"
git -C "$repo" init -q -b main
git() { command git -c user.name=bench -c user.email=bench@bench -c gc.auto=0 "$@"; }
if ((history > 0)); then
  # One commit per 4 KiB of random bytes, file N % 500 of 500, as one fast-import stream.
  perl -e '
    my ($n) = @ARGV;
    open(my $rand, "<:raw", "/dev/urandom") or die "urandom: $!";
    binmode STDOUT;
    for my $i (0 .. $n - 1) {
      my $msg = "commit $i\n";
      printf "commit refs/heads/main\ncommitter bench <bench\@bench> %d +0000\n", 1700000000 + $i;
      printf "data %d\n%s", length($msg), $msg;
      read($rand, my $bytes, 4096) == 4096 or die "urandom: short read";
      printf "M 100644 inline f%03d\ndata 4096\n", $i % 500;
      print $bytes, "\n";
    }' "$history" | git -C "$repo" fast-import --quiet
  git -C "$repo" reset -q --hard main
else
  cp -r /usr/include "$repo/include"
  git -C "$repo" add -A && git -C "$repo" commit -qm "include"
  cp -r /usr/share/doc "$repo/doc" 2>/dev/null || true
  find "$repo/doc" -type l -delete
  git -C "$repo" add -A && git -C "$repo" commit -qm "doc"
  mapfile -t headers < <(find "$repo/include" -name '*.h')
  for f in "${headers[@]:0:200}"; do echo "// bench" >>"$f"; done
  git -C "$repo" add -A && git -C "$repo" commit -qm "touch"
  git -C "$repo" gc -q
fi
chmod -R a+rX "$repo"
# chmod changed every file's ctime: git's index is refreshed as a developer's `git status`
# would, so that `run`'s look for uncommitted changes compares stat data, not contents. A
# second later: an entry changed in the second the index is written is "racily clean" to
# git, and its contents are compared on every later look.
sleep 1
git -C "$repo" update-index -q --refresh >/dev/null || true
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
  if ((remove_each)); then rm -rf "$dest"; fi
}

caches=$work/caches
run_clone() {
  local root=$work/roots.$1
  sync
  timed "$ateam" run "${run_as[@]}" "${cached[@]}" --cache-root "$caches" --repo "$repo" \
    --workspace-root "$root" -- true
  if ((remove_each)); then rm -rf "$root"; fi
}

if ((${#cached[@]} > 0)); then
  read -r cw cc <<<"$(run_clone cold)"
  printf 'cold dispatch (fills the cache): %.3f s (cpu %.3f s)\n' "$cw" "$cc"
  # One warm dispatch kept: its workspace against its checked-out files (du, in KiB).
  "$ateam" run "${run_as[@]}" "${cached[@]}" --cache-root "$caches" --repo "$repo" \
    --workspace-root "$work/weigh" -- true >/dev/null
  ws=$(echo "$work"/weigh/*/workspace)
  all=$(du -sk "$ws" | cut -f1)
  checkout=$(du -sk --exclude=.git "$ws" | cut -f1)
  printf 'warm workspace: %d KiB on disk for %d KiB of checked-out files (%.2fx); cache %s\n' \
    "$all" "$checkout" "$(awk -v a="$all" -v c="$checkout" 'BEGIN { print a / c }')" \
    "$(du -sh "$caches" | cut -f1)"
  rm -rf "$work/weigh"
fi

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

if ((concurrent > 0)); then
  sync
  start=$(date +%s.%N)
  pids=()
  for ((i = 0; i < concurrent; i++)); do
    "$ateam" run "${run_as[@]}" "${cached[@]}" --cache-root "$caches" --repo "$repo" \
      --workspace-root "$work/many" -- true >/dev/null 2>&1 &
    pids+=($!)
  done
  failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
  end=$(date +%s.%N)
  printf '%d dispatches at once: %.3f s until all ended, %d failed\n' "$concurrent" \
    "$(awk -v s="$start" -v e="$end" 'BEGIN { print e - s }')" "$failed"
fi
