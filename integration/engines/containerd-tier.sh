#!/usr/bin/env bash
# The containerd engine tier: Debian's containerd and runc, started here with their own
# root, state and socket directories (never the system service), run the image of
# build-image.sh in the four shapes a Kubernetes pod can have:
#   default    ctr's default OCI spec: masked and read-only /proc paths, Docker's capabilities
#   seccomp    the same with containerd's default seccomp profile (ctr run --seccomp)
#   unmasked   the default spec with oci/unmasked-proc.json (procMount: Unmasked)
#   userns     unmasked, in a user namespace mapping 0 -> 100000, 65536 ids (hostUsers: false)
#   non-root   unmasked, the process as uid 1000 (runAsUser: 1000): an unprivileged caller
# and, in the default shape, masked-proc.sh: what a sandbox without a fresh /proc would
# expose (shape "masked-proc").
# Each container shares the host's network namespace (ctr --net-host), so the tunnel's
# relay reaches the echo server this script runs on the host's loopback.
#   integration/engines/containerd-tier.sh BUILD_DIR WORK_DIR
# WORK_DIR's parents must be searchable by others: the user-namespaced container (host uid
# 100000) reaches its image below it.
# For each shape the results (in-container.sh's lines, the sandbox's lines, the status
# document's) must equal expected/SHAPE.txt; prints one line per shape and exits 1 on any
# difference. Exit 77: this machine cannot run containerd (the caller records the skip).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "$1" && pwd)
work=$2
wait_s=${SBX_ENGINE_TIMEOUT:-120}

say() { echo "containerd-tier: $*"; }
# shellcheck source=integration/engines/results.sh
. "$here/results.sh"
[[ $(id -u) -eq 0 ]] || { say "SKIP: needs root to start containerd"; exit 77; }
for tool in containerd ctr runc socat python3; do
  command -v "$tool" >/dev/null || { say "SKIP: $tool is not installed (scripts/install-engines.sh)"; exit 77; }
done

mkdir -p "$work"
sock="$work/containerd.sock"
# Every ctr call is bounded: a hung daemon or shim fails the tier instead of stalling CI.
ctr=(timeout 60 ctr --address "$sock" --namespace sbx-engines)
# runc's state and the I/O fifos below $work too (their defaults are below /run/containerd;
# containerd 1.6 keeps only its shims' sockets in /run/containerd/s, whatever the config).
own_dirs=(--runc-root "$work/runc" --fifo-dir "$work/fifo")
made_run_dir=
[[ -e /run/containerd ]] || made_run_dir=1
containerd_pid=
echo_pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  # Whatever a failed shape left: its task and container, then the daemons.
  local id
  if [[ -S "$sock" ]]; then
    for id in $("${ctr[@]}" containers list --quiet 2>/dev/null); do
      "${ctr[@]}" tasks kill --signal KILL "$id" >/dev/null 2>&1 || true
      "${ctr[@]}" tasks delete --force "$id" >/dev/null 2>&1 || true
      "${ctr[@]}" containers delete "$id" >/dev/null 2>&1 || true
    done
  fi
  if [[ -n "$echo_pid" ]]; then kill "$echo_pid" 2>/dev/null || true; fi
  if [[ -n "$containerd_pid" ]]; then
    kill "$containerd_pid" 2>/dev/null || true
    timeout 10 tail --pid="$containerd_pid" -f /dev/null || kill -KILL "$containerd_pid" 2>/dev/null || true
  fi
  # runc's state and the shims' mounts live below $work; nothing of it may stay mounted.
  { grep -o " $work/[^ ]*" /proc/self/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  # The shims' socket directory, when this tier made it and it is empty again.
  if [[ -n $made_run_dir ]]; then rmdir /run/containerd/s /run/containerd 2>/dev/null || true; fi
  return 0
}
trap cleanup EXIT

cat >"$work/config.toml" <<TOML
version = 2
root = "$work/root"
state = "$work/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[debug]
  address = ""
TOML
containerd --config "$work/config.toml" >"$work/containerd.log" 2>&1 &
containerd_pid=$!
if ! timeout 30 sh -c "until ctr --address '$sock' version >/dev/null 2>&1; do sleep 0.2; done"; then
  say "FAILED: containerd did not answer on $sock within 30 s"; tail -20 "$work/containerd.log" >&2; exit 1
fi
say "containerd $(ctr --address "$sock" version | sed -n 's/^ *Version: *//p' | tail -1), runc $(runc --version | sed -n 's/^runc version //p')"

# The upstream of the dispatch's route: an echo server on the host's loopback.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" EXEC:cat &
echo_pid=$!

"$here/build-image.sh" "$build" "$work/image"

# The ctr flags of each shape (the fragments are applied to the spec ctr generates).
shape_flags() {
  case $1 in
    default | unmasked | non-root | masked-proc) ;;
    seccomp) echo --seccomp ;;
    userns) ;;
  esac
}
shape_fragments() {
  case $1 in
    unmasked) echo "$here/oci/unmasked-proc.json" ;;
    userns) echo "$here/oci/unmasked-proc.json $here/oci/userns.json" ;;
    non-root) echo "$here/oci/unmasked-proc.json $here/oci/non-root.json" ;;
  esac
}

# The container's command in shape $1.
shape_command() {
  case $1 in
    masked-proc) echo /bin/sh /usr/share/engines/masked-proc.sh ;;
    *) echo /bin/sh /usr/share/engines/in-container.sh "$port" ;;
  esac
}

# Runs shape $1; its results go to $work/$1/results.txt.
run_shape() {
  local shape=$1 dir="$work/$1" rootfs="$work/image"
  mkdir -p "$dir/dispatches"
  if [[ $shape == userns ]]; then
    # What a remapping snapshotter does to an image: its files belong to the mapped ids.
    rootfs="$dir/image"
    cp -a "$work/image" "$rootfs"
    chown -R 100000:100000 "$rootfs" "$dir/dispatches"
  fi
  [[ $shape != non-root ]] || chown 1000:1000 "$dir/dispatches"
  # ctr generates the spec of the shape's flags; a container that only sleeps shows it.
  # shellcheck disable=SC2046  # the flags are words
  "${ctr[@]}" run "${own_dirs[@]}" --detach --rootfs --net-host $(shape_flags "$shape") \
    --mount "type=bind,src=$dir/dispatches,dst=/dispatches,options=rbind:rw" \
    "$rootfs" "spec-$shape" /bin/sleep 60 >/dev/null
  "${ctr[@]}" containers info --spec "spec-$shape" >"$dir/ctr-spec.json"
  "${ctr[@]}" tasks kill --signal KILL "spec-$shape" >/dev/null
  "${ctr[@]}" tasks delete --force "spec-$shape" >/dev/null 2>&1 || true
  "${ctr[@]}" containers delete "spec-$shape"
  # shellcheck disable=SC2046
  "$here/merge-spec.py" "$dir/ctr-spec.json" "$dir/spec.json" $(shape_fragments "$shape") \
    -- $(shape_command "$shape")
  local rc=0
  timeout "$wait_s" ctr --address "$sock" --namespace sbx-engines run "${own_dirs[@]}" --rm --config "$dir/spec.json" "shape-$shape" \
    >"$dir/container.out" 2>"$dir/container.err" || rc=$?
  collect_results "$dir" "$rc" >"$dir/results.txt"
}

failed=0
for shape in default seccomp unmasked userns non-root masked-proc; do
  run_shape "$shape" || { say "FAILED: shape $shape: the tier itself failed (see $work/$shape)"; failed=1; continue; }
  # '#' lines of the expected files are comments.
  if diff -u <(grep -v '^#' "$here/expected/$shape.txt") "$work/$shape/results.txt" >"$work/$shape/diff.txt"; then
    say "shape $shape: $(grep -E '(run-exit|doctor-exit)' "$work/$shape/results.txt" | tr '\n' ' ')as expected"
  else
    say "FAILED: shape $shape differs from integration/engines/expected/$shape.txt:"
    cat "$work/$shape/diff.txt"
    sed 's/^/  doctor| /' "$work/$shape/dispatches/doctor.txt" 2>/dev/null || true
    sed 's/^/  ctr| /' "$work/$shape/container.err" || true
    failed=1
  fi
done
exit "$failed"
