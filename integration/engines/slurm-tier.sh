#!/usr/bin/env bash
# The Slurm engine tier: a one-node cluster from Debian's packages (munged, slurmctld,
# slurmd), configured here on the loopback with its own config, state, spool and socket
# directories below WORK_DIR, and stopped at the end. Dispatches run as batch jobs
# (sbatch --wrap "ateam-sandbox run ..."):
#   job        as the unprivileged user: the status document and the out dir come back
#   limits     --memory/--pids as the unprivileged user and as root (expected/slurm.txt
#              says which are enforced inside the job and which are refused)
#   scancel    a running dispatch cancelled: run ends it and writes its status document
#   integration/engines/slurm-tier.sh BUILD_DIR WORK_DIR [USER]
# The results must equal expected/slurm.txt; exits 1 on any difference, 77 when this
# machine cannot run Slurm (the caller records the skip).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "$1" && pwd)
work=$2
user=${3:-${SBX_CI_USER:-sbx-ci}}
wait_s=${SBX_ENGINE_TIMEOUT:-120}

say() { echo "slurm-tier: $*"; }
[[ $(id -u) -eq 0 ]] || { say "SKIP: needs root to start munged, slurmctld and slurmd"; exit 77; }
for tool in munged slurmctld slurmd sbatch scancel squeue scontrol python3; do
  command -v "$tool" >/dev/null || { say "SKIP: $tool is not installed (scripts/install-engines.sh)"; exit 77; }
done
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"

mkdir -p "$work"/{munge,ctld,slurmd,bin}
chmod 0755 "$work" "$work/bin"
chmod 0755 "$work/munge"  # its socket is for every user; the key stays 0400
export SLURM_CONF="$work/slurm.conf"

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local pid
  # Jobs first (slurmd ends their steps), then the daemons, each by the pid it wrote.
  scancel --full --quiet --partition dispatch 2>/dev/null || true
  for pid_file in "$work/slurmd.pid" "$work/slurmctld.pid" "$work/munge/munged.pid"; do
    [[ -s "$pid_file" ]] || continue
    pid=$(cat "$pid_file")
    kill "$pid" 2>/dev/null || true
    timeout 20 tail --pid="$pid" -f /dev/null || kill -KILL "$pid" 2>/dev/null || true
  done
  return 0
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
node=$(hostname -s)
mem_mb=$(($(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo) / 1024 - 256))
sed -e "s|@WORK@|$work|g" -e "s|@NODE@|$node|g" -e "s|@CTLD_PORT@|$(free_port)|" \
  -e "s|@SLURMD_PORT@|$(free_port)|" -e "s|@CPUS@|$(nproc)|" -e "s|@MEM_MB@|$mem_mb|" \
  "$here/slurm.conf.in" >"$SLURM_CONF"
chmod 0644 "$SLURM_CONF"

# munged as root, with a fresh key, on its own socket (AuthInfo in slurm.conf names it).
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 0400 "$work/munge/munge.key"
munged --force --socket="$work/munge/munge.socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
  --seed-file="$work/munge/munged.seed"
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
if ! timeout 60 sh -c 'until sinfo -h -o %T 2>/dev/null | grep -qx idle; do sleep 0.5; done'; then
  say "FAILED: the node did not become idle within 60 s"
  tail -20 "$work/slurmctld.log" "$work/slurmd.log" >&2 || true
  exit 1
fi
say "$(sinfo -V), node $node idle"

for exe in "$build/ateam-sandbox" "$build/integration/run/run_limits_probe" "$here/slurm/dispatch.sbatch"; do
  install -m 0755 "$exe" "$work/bin/"
done
A="$work/bin/ateam-sandbox"
P="$work/bin/run_limits_probe"

# A directory of the job's user for dispatch $1; prints its path.
job_dir() {
  local d="$work/jobs/$1"
  mkdir -p "$d/ws" "$d/out"
  chmod 0755 "$work/jobs"
  chown -R "$2:" "$d"
  # A root caller's agent runs as 65534 and writes the out dir itself.
  [[ $2 != root ]] || chown 65534:65534 "$d/out"
  echo "$d"
}
# Submits slurm/dispatch.sbatch as user $1 for the dispatch directory $2, the agent's
# command after it; prints the job id.
submit_script() {
  local as=$1 dir=$2
  shift 2
  runuser -u "$as" -- env SLURM_CONF="$SLURM_CONF" sbatch --parsable --chdir "$dir" \
    --output "$dir/job.log" --export="ALL,PATH=$work/bin:/usr/bin:/bin,DISPATCH=$dir" \
    "$work/bin/dispatch.sbatch" "$@"
}
# Submits a batch job as user $1 in directory $2 wrapping the command $3; prints the job id.
submit() {
  local as=$1 dir=$2 cmd=$3
  runuser -u "$as" -- env SLURM_CONF="$SLURM_CONF" sbatch --parsable --chdir "$dir" \
    --output "$dir/job.log" --time 5 --wrap "exec $cmd"
}
# Waits until job $1 has left the queue; prints its final state and exit code.
wait_job() {
  if ! timeout "$wait_s" sh -c "while squeue -h -j $1 2>/dev/null | grep -q .; do sleep 0.5; done"; then
    say "FAILED: job $1 still queued or running after $wait_s s"; return 1
  fi
  scontrol show job -o "$1" | grep -o -E 'JobState=[A-Z_]+|ExitCode=[0-9:]+' | tr '\n' ' '
}
# The status document's exit code and reason; "none" when there is none.
status_of() {
  [[ -f "$1" ]] || { echo none; return; }
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print("exit_code", s.get("exit_code"), "reason", s.get("reason"))' "$1"
}
# The verdict on a limit job in directory $1: "refused: LINE" (exit 125), "enforced"
# (the status reason is $2, or the count $3 the agent reached stayed below $4), or
# "NOT ENFORCED" with what run said.
limit_verdict() {
  local d=$1 reason=$2 count=$3 bound=$4 status
  status=$(status_of "$d/status.json")
  if [[ $status == "exit_code 125 "* ]]; then
    echo "refused: $(sed -n 's/^ateam-sandbox run: //p' "$d/job.log" | head -1)"
  elif [[ -n $reason && $status == *"$reason" ]]; then
    echo "enforced ($reason)"
  elif [[ $count =~ ^[0-9]+$ && $count -lt $bound ]]; then
    echo "enforced (the agent stayed below $bound)"
  else
    echo "NOT ENFORCED: the agent reached ${count:-?} of $bound; run said: $(sed -n 's/^ateam-sandbox run: //p' "$d/job.log" | head -1)"
  fi
}
run_opts() { echo "--workspace $1/ws --out $1/out --status-json $1/status.json --ro $work/bin"; }

results="$work/results.txt"
: >"$results"
{
  # 1. A dispatch as the user's batch job.
  d=$(job_dir job "$user")
  # shellcheck disable=SC2016  # $ATEAM_OUT is the sandbox's
  id=$(submit_script "$user" "$d" sh -c 'echo made > made; echo result > $ATEAM_OUT/result')
  echo "job: $(wait_job "$id")"
  echo "job: status $(status_of "$d/status.json")"
  echo "job: workspace $(cat "$d/ws/made" 2>/dev/null || echo none) out $(cat "$d/out/result" 2>/dev/null || echo none)"

  # 2. Limits, as the user and as root: each is enforced inside the job, or refused (125
  # and one line); anything else is reported as NOT ENFORCED.
  for as in "$user" root; do
    who=user
    [[ $as == root ]] && who=root
    d=$(job_dir "memory-$who" "$as")
    id=$(submit "$as" "$d" "$A run $(run_opts "$d") --memory 64m -- $P alloc 512")
    echo "memory/$who: $(wait_job "$id")"
    echo "memory/$who: status $(status_of "$d/status.json")"
    echo "memory/$who: $(limit_verdict "$d" "reason oom" "$(sed -n 's/^allocated: //p' "$d/job.log")" 512)"
    d=$(job_dir "pids-$who" "$as")
    id=$(submit "$as" "$d" "$A run $(run_opts "$d") --pids 64 -- sh -c '$P forks 1000 / > \$ATEAM_OUT/forks'")
    echo "pids/$who: $(wait_job "$id")"
    echo "pids/$who: status $(status_of "$d/status.json")"
    echo "pids/$who: $(limit_verdict "$d" "" "$(sed -n 's/^forks: //p' "$d/out/forks" 2>/dev/null)" 64)"
  done

  # 3. scancel of a running dispatch.
  d=$(job_dir scancel "$user")
  id=$(submit_script "$user" "$d" sh -c 'echo > started; sleep 600')
  if timeout "$wait_s" sh -c "until [ -e '$d/ws/started' ]; do sleep 0.2; done"; then
    scancel "$id"
    echo "scancel: $(wait_job "$id")"
    echo "scancel: status $(status_of "$d/status.json")"
  else
    echo "scancel: the dispatch never started"
  fi
} | tee "$results"

# '#' lines of the expected file are comments.
if diff -u <(grep -v '^#' "$here/expected/slurm.txt") "$results"; then
  say "all jobs as expected"
else
  say "FAILED: the results differ from integration/engines/expected/slurm.txt"
  for log in "$work"/jobs/*/job.log; do sed "s#^#  $(basename "$(dirname "$log")")| #" "$log"; done
  exit 1
fi
