#!/bin/sh
# Measures, inside a container with the default (masked) /proc, what the candidates for a
# sandbox without a fresh /proc would expose to the agent (docs/fleet.md, "Where /proc
# stays masked"). Runs as uid 0 of the container:
#   /usr/share/engines/masked-proc.sh
# Two neighbours of the pod run beside the sandbox: one as root, one as the agent's uid
# (what the dispatcher itself is for an unprivileged caller), each with a secret in its
# environment. The candidate sandboxes are made with ateam-sandbox's bwrap face by uid
# 65534 (an unprivileged caller): every namespace unshared, the container's / read-only,
# and /proc either the container's own bound read-only, or an empty tmpfs.
SECRET_ROOT=root-neighbour-secret sleep 300 &
root_pid=$!
/usr/bin/setpriv --reuid 65534 --regid 65534 --clear-groups env SECRET_SAME=same-uid-secret sleep 300 &
same_pid=$!
sleep 0.2
# A file of the container outside the sandbox's view (its /run is the container's own tmpfs,
# not bound into the sandbox).
echo secret-of-the-container >/run/only-in-the-container
sandbox() {
  /usr/bin/setpriv --reuid 65534 --regid 65534 --clear-groups \
    ateam-sandbox bwrap --unshare-all --die-with-parent --ro-bind / / --tmpfs /run --dev /dev "$@"
}
sandbox --ro-bind /proc /proc -- sh -c '
  n=$(ls /proc | grep -c "^[0-9]")
  if [ "$n" -gt 3 ]; then echo "outer-proc: the pod'"'"'s processes listed"; else echo "outer-proc: only the sandbox'"'"'s processes listed"; fi
  if [ "$(wc -l < /proc/'"$root_pid"'/net/tcp 2>/dev/null || echo 0)" -gt 0 ]; then echo "outer-proc: the pod'"'"'s sockets (/proc/PID/net) exposed"; else echo "outer-proc: the pod'"'"'s sockets hidden"; fi
  if grep -q sleep /proc/'"$root_pid"'/cmdline 2>/dev/null; then echo "outer-proc: root neighbour cmdline exposed"; else echo "outer-proc: root neighbour cmdline hidden"; fi
  if grep -q root-neighbour-secret /proc/'"$root_pid"'/environ 2>/dev/null; then echo "outer-proc: root neighbour environ exposed"; else echo "outer-proc: root neighbour environ hidden"; fi
  if grep -q same-uid-secret /proc/'"$same_pid"'/environ 2>/dev/null; then echo "outer-proc: same-uid neighbour environ exposed"; else echo "outer-proc: same-uid neighbour environ hidden"; fi
  if cat /proc/'"$same_pid"'/root/run/only-in-the-container 2>/dev/null | grep -q secret; then echo "outer-proc: container files through /proc/PID/root exposed"; else echo "outer-proc: container files through /proc/PID/root hidden"; fi
  if kill -0 '"$same_pid"' 2>/dev/null; then echo "outer-proc: same-uid neighbour signalable"; else echo "outer-proc: same-uid neighbour not signalable"; fi
  if [ -r /proc/self/status ]; then echo "outer-proc: /proc/self is the agent"; else echo "outer-proc: no /proc/self"; fi
'
sandbox --tmpfs /proc -- sh -c '
  echo "no-proc: $(ls /proc | grep -c "^[0-9]") processes listed"
  if readlink /proc/self/exe >/dev/null 2>&1; then echo "no-proc: /proc/self/exe works"; else echo "no-proc: /proc/self/exe missing"; fi
  if ls /proc/self/fd >/dev/null 2>&1; then echo "no-proc: /proc/self/fd works"; else echo "no-proc: /proc/self/fd missing"; fi
  if git --version >/dev/null 2>&1; then echo "no-proc: git --version works"; else echo "no-proc: git --version fails"; fi
'
kill "$root_pid" "$same_pid"
