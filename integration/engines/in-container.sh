#!/bin/sh
# The container's process in the engine tier (busybox sh, as the container's user):
#   /usr/share/engines/in-container.sh PORT
# Runs `ateam-sandbox doctor`, then, with each backend (native, and bwrap: the image's
# /usr/bin/bwrap), one dispatch that clones /image/repo, reaches the host's loopback server
# on PORT through the tunnel as api.example.test:443, and runs the escape checks
# (in-sandbox.sh) inside the sandbox. Everything lands in /dispatches/BACKEND, below the
# bind mount the tier reads back; the lines in /dispatches/lines.txt are the tier's results.
port=$1
# The lines go to a file of the volume, not to stdout: an engine may stop copying a
# container's stdout before the last lines arrive when its process ends (ctr under load).
exec >/dispatches/lines.txt
ateam-sandbox doctor >/dispatches/doctor.txt 2>&1
echo "doctor-exit $?"
sed -n 's/^FAIL \([^:]*\):.*/doctor-fail \1/p' /dispatches/doctor.txt
for backend in native bwrap; do
  d=/dispatches/$backend
  # The agent writes the out dir: for a root caller it is uid 65534, so it is created for it.
  mkdir -p $d/out
  [ "$(id -u)" != 0 ] || chown 65534:65534 $d/out
  ateam-sandbox run --backend $backend --repo /image/repo --workspace-root $d/root \
    --out $d/out --status-json $d/status.json --allow "api.example.test=127.0.0.1:$port,tcp" \
    -- sh /usr/share/engines/in-sandbox.sh "$port" >$d/run.out 2>$d/run.err
  echo "$backend: run-exit $?"
  echo "$backend: run-err-lines $(wc -l <$d/run.err)"
done
