#!/usr/bin/env bash
# bench-smoke: every bench in bench/ run once with the smallest counts, as root and as an
# unprivileged user (hand_back_bench: root only), from the build directory BUILD. Not a
# measurement (seconds each, numbers thrown away): a check that each bench still runs as
# docs/performance.md says, so that a change to the code a bench drives (a new refusal, a
# renamed flag) breaks CI rather than the next measurement.
#
#   scripts/bench-smoke.sh BUILD [USER]      (USER default sbx-ci, made by scripts/ci-user.sh)
set -euo pipefail
build=$(realpath "${1:?usage: $0 BUILD [USER]}")
user=${2:-sbx-ci}
src=$(cd "$(dirname "$0")/.." && pwd)
[[ $(id -u) == 0 ]] || { echo "bench-smoke: run it as root (it also runs as $user)" >&2; exit 2; }
id "$user" >/dev/null 2>&1 || { echo "bench-smoke: no user $user (scripts/ci-user.sh makes it)" >&2; exit 2; }

# The copies the unprivileged user runs, in a directory everyone can read (as the docs do).
stage=$(mktemp -d /tmp/bench-smoke.XXXXXX)
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
mkdir "$stage/compat"
cp "$build"/bench/{startup_bench,dispatch_bench,relay_bench,broker_bench} "$build/ateam-sandbox" \
  "$src/bench/clone_bench.sh" "$src/bench/disk_bound_bench.sh" "$stage/"
cp "$build/compat/bwrap" "$stage/compat/"
chmod -R a+rX "$stage"

failed=0
# run WHO NAME COMMAND...: one bench, its output kept only when it fails.
run() {
  local who=$1 name=$2
  shift 2
  local log="$stage/$name.$who.log" start=$SECONDS
  local -a prefix=()
  [[ $who == root ]] || prefix=(runuser -u "$user" -- env -C /tmp)
  if "${prefix[@]}" "$@" >"$log" 2>&1; then
    echo "bench-smoke: ok    $name as $who ($((SECONDS - start)) s)"
  else
    echo "bench-smoke: FAIL  $name as $who (exit $?): $*" >&2
    tail -20 "$log" >&2
    failed=1
  fi
}

for who in root "$user"; do
  if [[ $who == root ]]; then dir=$build; bin=$build/bench; clone=$src/bench; else dir=$stage; bin=$stage; clone=$stage; fi
  run "$who" startup_bench "$bin/startup_bench" --a "native=$dir/compat/bwrap" --b bwrap=/usr/bin/bwrap --runs 3
  run "$who" dispatch_bench "$bin/dispatch_bench" --ateam "$dir/ateam-sandbox" --runs 1 --warmup 0 \
    --burst 2 --burst-rounds 2 --modes workspace,repo --dir /tmp
  run "$who" relay_bench "$bin/relay_bench" --samples 1 --bulk-mib 8 --rtt-rounds 200 --cps-seconds 1 \
    --idle-conns 20
  run "$who" broker_bench "$bin/broker_bench" --samples 1 --warm-rounds 5 --stream-mib 1
  run "$who" clone_bench "$clone/clone_bench.sh" --ateam "$dir/ateam-sandbox" --history 200 --cached \
    --pairs 1 --concurrent 2
  run "$who" disk_bound_bench "$clone/disk_bound_bench.sh" --ateam "$dir/ateam-sandbox" --runs 1
done
run root hand_back_bench "$build/bench/hand_back_bench" /var/tmp 3 3 1
exit $failed
