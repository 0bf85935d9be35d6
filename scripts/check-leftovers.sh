#!/usr/bin/env bash
# Fails when a process started by a test run is still running after it:
#   scripts/check-leftovers.sh NAME=VALUE [NEEDLE...]
# NAME=VALUE is the run's marker, an environment variable that the run exported before it
# started anything (scripts/test.sh: SBX_TEST_RUN, scripts/run_matrix.sh: SBX_MATRIX_RUN),
# so every process the run started inherits it, whatever session, process group or parent
# it moved to. A NEEDLE (e.g. the matrix's staging directory) also marks a process whose
# command line contains it, for programs that clear their environment. Each leftover is
# named (pid, user, command line), then killed, so that a CI machine that runs the suite
# again and again does not pile them up. This script and its ancestors are not counted.
set -euo pipefail
marker=$1
shift
needles=("$@")

# The parent of $1, from /proc/PID/stat (the fields after the command name's last ')').
ppid_of() {
  local stat rest
  read -r stat 2>/dev/null <"/proc/$1/stat" || return 1
  rest=${stat##*) }
  read -r _ ppid _ <<<"$rest"
  echo "$ppid"
}

declare -A mine=()
pid=$$
while [[ $pid -gt 1 ]]; do
  mine[$pid]=1
  pid=$(ppid_of "$pid") || break
done

found=()
for dir in /proc/[0-9]*; do
  pid=${dir#/proc/}
  [[ -n ${mine[$pid]:-} ]] && continue
  # Kernel threads and zombies have no environment and no command line: nothing to end.
  env=()
  mapfile -d "" -t env 2>/dev/null <"$dir/environ" || continue
  cmd=()
  mapfile -d "" -t cmd 2>/dev/null <"$dir/cmdline" || continue
  [[ ${#cmd[@]} -eq 0 ]] && continue
  hit=0
  for entry in "${env[@]}"; do
    if [[ $entry == "$marker" ]]; then
      hit=1
      break
    fi
  done
  if [[ $hit -eq 0 ]]; then
    for needle in "${needles[@]}"; do
      if [[ "${cmd[*]}" == *"$needle"* ]]; then
        hit=1
        break
      fi
    done
  fi
  [[ $hit -eq 1 ]] || continue
  # Started by this script itself (the $(...) above): not a leftover.
  [[ $(ppid_of "$pid" 2>/dev/null || echo 0) == "$$" ]] && continue
  found+=("$pid")
  echo "check-leftovers: LEFT RUNNING: pid $pid (user $(stat -c %U "$dir" 2>/dev/null || echo '?')): ${cmd[*]}" >&2
done

if [[ ${#found[@]} -gt 0 ]]; then
  kill -KILL "${found[@]}" 2>/dev/null || true
  echo "check-leftovers: FAILED: ${#found[@]} processes of this run were still running (killed now)" >&2
  exit 1
fi
echo "check-leftovers: no process of this run is left"
