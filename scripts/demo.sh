#!/usr/bin/env bash
# The built-in demo: installs the build dependencies, builds ateam-sandbox, and runs a
# sandbox (as the bwrap-compatible face) that shows from inside what it can and cannot see.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DSBX_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target ateam-sandbox >/dev/null

echo "== ateam-sandbox: a bwrap-compatible sandbox, built without bubblewrap"
echo "== host view: $(id -un) on $(hostname), $(ls / | wc -l) entries in /"
echo
build/ateam-sandbox bwrap \
  --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
  --symlink usr/lib64 /lib64 --ro-bind /etc /etc \
  --tmpfs /tmp --tmpfs /home/demo --proc /proc --dev /dev \
  --unshare-all --hostname sandbox --die-with-parent --new-session \
  --clearenv --setenv HOME /home/demo --setenv PATH /usr/bin --chdir /home/demo \
  -- /bin/sh -c '
    echo "inside:  uid=$(id -u) on host \"$(hostname)\", pid $$"
    echo "root:    $(ls / | tr "\n" " ")"
    echo "procs:   $(ls /proc | grep -c "^[0-9]") visible processes"
    echo "net:     $(ls /proc/net/dev >/dev/null && tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " " | tr "\n" " ")(loopback only)"
    echo "env:     $(env | cut -d= -f1 | sort | tr "\n" " ")"
    echo "caps:    $(grep CapEff /proc/self/status | cut -f2)"
    echo "nnp:     $(grep NoNewPrivs /proc/self/status | cut -f2)"
    if touch /usr/probe 2>/dev/null; then echo "/usr:    WRITABLE (unexpected)"; else echo "/usr:    read-only"; fi
    echo "home:    $(touch /home/demo/scratch && echo writable tmpfs, thrown away at exit)"
  '
