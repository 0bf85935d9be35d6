#!/bin/sh
# The agent's side of masked-proc.sh, in a candidate sandbox:
#   sh masked-proc-inside.sh LABEL ROOT_PID SAME_UID_PID
# One line per thing the agent could reach, "LABEL: WHAT exposed|hidden|...".
label=$1 root_pid=$2 same_pid=$3
say() { echo "$label: $*"; }
# $1: what; rest: a command that succeeds when the agent reaches it.
reach() {
  what=$1
  shift
  if "$@" >/dev/null 2>&1; then say "$what exposed"; else say "$what hidden"; fi
}
# The sandbox itself has at most three processes (sh, and what it runs).
count=0
for entry in /proc/[0-9]*; do [ -d "$entry" ] && count=$((count + 1)); done
if [ "$count" -gt 3 ]; then say "the pod's processes listed"; else say "only the sandbox's processes listed"; fi
reach "the pod's sockets (/proc/PID/net/tcp)" grep -q : "/proc/$root_pid/net/tcp"
reach "root neighbour cmdline" grep -q sleep "/proc/$root_pid/cmdline"
reach "root neighbour environ" grep -q root-neighbour-secret "/proc/$root_pid/environ"
reach "same-uid neighbour environ" grep -q same-uid-secret "/proc/$same_pid/environ"
reach "container files through /proc/PID/root" grep -q secret "/proc/$same_pid/root/run/only-in-the-container"
reach "same-uid neighbour signals" kill -0 "$same_pid"
# What the agent's own tools need.
works() {
  what=$1
  shift
  if "$@" >/dev/null 2>&1; then say "$what works"; else say "$what fails"; fi
}
works "readlink /proc/self/exe" readlink /proc/self/exe
works "ls /proc/self/fd" ls /proc/self/fd
works "git --version" git --version
