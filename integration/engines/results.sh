# shellcheck shell=bash
# The results of one container of the engine tier, as expected/SHAPE.txt holds them
# (sourced by containerd-tier.sh and podman-tier.sh):
#   collect_results DIR CONTAINER_EXIT
# DIR holds container.out (the container's stdout) and dispatches/, the container's volume:
# lines.txt (in-container.sh's lines, read instead of its stdout), doctor.txt, and per
# backend run.out, run.err, status.json and out/.
collect_results() {
  local dir=$1 backend d
  echo "container-exit $2"
  if [[ -f "$dir/dispatches/lines.txt" ]]; then cat "$dir/dispatches/lines.txt"; else cat "$dir/container.out"; fi
  # doctor's lines that name a setting to change (not those after an earlier failure)
  grep -E '^FAIL (proc|seccomp-filter|sethostname):' "$dir/dispatches/doctor.txt" 2>/dev/null |
    grep -v ': not tried, an earlier step failed' | sed 's/^/doctor: /' || true
  for backend in native bwrap; do
    d="$dir/dispatches/$backend"
    [[ -d $d ]] || continue
    [[ -s "$d/run.err" ]] && sed "s/^/$backend: run-err: /" "$d/run.err"
    [[ -s "$d/run.out" ]] && sed "s/^/$backend: sandbox: /" "$d/run.out"
    if [[ -f "$d/status.json" ]]; then
      python3 - "$d/status.json" "$backend" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]}: status: exit_code", s.get("exit_code"), "reason", s.get("reason"))
PY
    else
      echo "$backend: status: none"
    fi
    if [[ -d "$d/out" ]]; then echo "$backend: out-dir: present"; else echo "$backend: out-dir: none"; fi
  done
  return 0
}
