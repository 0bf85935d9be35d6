#!/bin/sh
# The agent's side of the engine tier, inside the sandbox inside the container:
#   sh /usr/share/engines/in-sandbox.sh PORT
# Prints what the tier compares with integration/engines/expected-in-sandbox.txt: the
# clone of --repo, who the agent is, and the escape checks of the static probe.
port=$1
echo "readme: $(cat README)"
# The report first, then the grep: in a pipeline the grep may or may not be in `pids`.
probe report >/tmp/report
grep -E '^(uid|gid|CapEff|CapBnd|NoNewPrivs|Seccomp|pids|links):' /tmp/report
for call in unshare-user unshare-net keyctl io_uring_setup socket-vsock ioctl-tiocsti; do
  probe try-syscall $call
done
# The image is read-only in the sandbox, the container's volume is not in its view.
probe try-write /usr/bin/written-by-agent
probe try-read /dispatches/doctor.txt
# The host's loopback server itself is out of reach; the route to it goes through the tunnel.
probe connect 127.0.0.1 "$port"
run_netclient concurrent api.example.test 443 3 | grep '^echoed'
