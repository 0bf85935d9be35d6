#!/usr/bin/env bash
# The Podman part of the engine tier: Debian's Podman 4.3 (Docker's flags, runc below),
# with its own storage, run and temporary directories below WORK_DIR, runs the image of
# build-image.sh (podman run --rootfs, no registry) in three shapes:
#   default      Podman's defaults: masked /proc, its default seccomp profile
#   systempaths  --security-opt systempaths=unconfined alone (the seccomp profile stays)
#   flags        the flags of podman/security-flags, as docs/fleet.md gives them for Docker
# each container running in-container.sh with the host's network. The results must equal
# expected/podman-SHAPE.txt; exits 1 on any difference, 77 when this machine cannot run
# Podman (the caller records the skip).
#   integration/engines/podman-tier.sh BUILD_DIR WORK_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "$1" && pwd)
work=$2
wait_s=${SBX_ENGINE_TIMEOUT:-120}

say() { echo "podman-tier: $*"; }
# shellcheck source=integration/engines/results.sh
. "$here/results.sh"
[[ $(id -u) -eq 0 ]] || { say "SKIP: needs root for rootful Podman"; exit 77; }
for tool in podman runc socat python3; do
  command -v "$tool" >/dev/null || { say "SKIP: $tool is not installed (scripts/install-engines.sh)"; exit 77; }
done

mkdir -p "$work/tmp"
podman=(timeout "$wait_s" podman --root "$work/storage" --runroot "$work/run" --tmpdir "$work/tmp"
  --storage-driver vfs --cgroup-manager cgroupfs --events-backend file --runtime runc)
echo_pid=
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  "${podman[@]}" rm --all --force --time 0 >/dev/null 2>&1 || true
  if [[ -n "$echo_pid" ]]; then kill "$echo_pid" 2>/dev/null || true; fi
  return 0
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" EXEC:cat &
echo_pid=$!
"$here/build-image.sh" "$build" "$work/image"
say "$(podman --version), runc $(runc --version | sed -n 's/^runc version //p')"

shape_flags() {
  case $1 in
    default) ;;
    systempaths) echo --security-opt systempaths=unconfined ;;
    flags) grep -v '^#' "$here/podman/security-flags" ;;
  esac
}

failed=0
for shape in default systempaths flags; do
  dir="$work/$shape"
  mkdir -p "$dir/dispatches"
  rc=0
  # Podman's default rlimits (1048576 files) need CAP_SYS_RESOURCE to be set, which a CI
  # job may not have; these are at most the usual hard limits.
  # shellcheck disable=SC2046  # the flags are words
  "${podman[@]}" run --rm --network host --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
    $(shape_flags "$shape") -v "$dir/dispatches:/dispatches" --rootfs "$work/image" \
    /bin/sh /usr/share/engines/in-container.sh "$port" >"$dir/container.out" 2>"$dir/container.err" || rc=$?
  collect_results "$dir" "$rc" >"$dir/results.txt"
  if diff -u <(grep -v '^#' "$here/expected/podman-$shape.txt") "$dir/results.txt" >"$dir/diff.txt"; then
    say "shape $shape: $(grep -E '(run-exit|doctor-exit)' "$dir/results.txt" | tr '\n' ' ')as expected"
  else
    say "FAILED: shape $shape differs from integration/engines/expected/podman-$shape.txt:"
    cat "$dir/diff.txt"
    sed 's/^/  doctor| /' "$dir/dispatches/doctor.txt" 2>/dev/null || true
    sed 's/^/  podman| /' "$dir/container.err" || true
    failed=1
  fi
done
exit "$failed"
