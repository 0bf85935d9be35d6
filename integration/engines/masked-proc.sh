#!/bin/sh
# Measures, inside a container with the default (masked) /proc, what the candidates for a
# sandbox without a fresh /proc would expose to the agent (docs/fleet.md, "Where /proc
# stays masked"). Runs as uid 0 of the container:
#   /usr/share/engines/masked-proc.sh
# Two neighbours of the pod run beside the sandbox: one as root, one as the agent's uid
# (what the dispatcher itself is for an unprivileged caller), each with a secret in its
# environment. The candidate sandboxes are made with ateam-sandbox's bwrap face by uid
# 65534 (an unprivileged caller): every namespace unshared, the container's / read-only,
# and /proc either the container's own bound read-only, or an empty tmpfs; inside,
# masked-proc-inside.sh says what it reaches.
SECRET_ROOT=root-neighbour-secret sleep 300 &
root_pid=$!
/usr/bin/setpriv --reuid 65534 --regid 65534 --clear-groups env SECRET_SAME=same-uid-secret sleep 300 &
same_pid=$!
# Both neighbours have exec'd sleep before the sandbox looks (at most 10 s).
for pid in "$root_pid" "$same_pid"; do
  tries=0
  until grep -q sleep "/proc/$pid/cmdline" 2>/dev/null || [ $tries -ge 100 ]; do
    sleep 0.1
    tries=$((tries + 1))
  done
done
# A file of the container outside the sandbox's view (the sandbox gets its own /run).
echo secret-of-the-container >/run/only-in-the-container
sandbox() {
  /usr/bin/setpriv --reuid 65534 --regid 65534 --clear-groups \
    ateam-sandbox bwrap --unshare-all --die-with-parent --ro-bind / / --tmpfs /run --dev /dev "$@"
}
inside=/usr/share/engines/masked-proc-inside.sh
sandbox --ro-bind /proc /proc -- sh "$inside" outer-proc "$root_pid" "$same_pid"
sandbox --tmpfs /proc -- sh "$inside" no-proc "$root_pid" "$same_pid"
kill "$root_pid" "$same_pid"
