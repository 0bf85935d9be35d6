#!/usr/bin/env bash
# The built-in demo: installs the dependencies, builds ateam-sandbox, and runs one dispatch.
# A sample repository is cloned fresh; a scripted "agent" lists what it can see, writes a
# report to the out dir, calls a local demo HTTPS endpoint through the tunnel, and fails to
# reach anything else. The report is printed at the end.
# With $SBX_DEMO_BIN set (e.g. /usr/bin/ateam-sandbox from the package), nothing is installed
# or built: the demo runs that executable (it needs git, openssl and curl).
set -euo pipefail
repo_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_dir"

sandbox=${SBX_DEMO_BIN:-build/ateam-sandbox}
if [[ -z ${SBX_DEMO_BIN:-} ]]; then
scripts/install-deps.sh --if-missing
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSBX_BUILD_TESTS=OFF -DSBX_BUILD_BENCH=OFF >/dev/null
build_log=$(mktemp)
if ! cmake --build build -j"$(nproc)" --target ateam-sandbox >/dev/null 2>"$build_log"; then
  cat "$build_log" >&2
  rm -f "$build_log"
  exit 1
fi
# The static executable's link says that getpwnam/getaddrinfo load the host glibc's NSS
# modules at run time: expected (cli/executable.cmake), so only other messages are shown.
grep -v -e 'in statically linked applications requires at runtime' \
  -e '^/usr/bin/ld: .*: in function `.*'"'"':$' "$build_log" >&2 || true
rm -f "$build_log"
fi

# run puts dispatch directories only below directories owned by root or the caller: where
# /tmp belongs to someone else (some containers give it to the overflow uid), use /var/tmp.
demo_base=/tmp
if [[ $(stat -c %u /tmp) != 0 && $(stat -c %u /tmp) != $(id -u) ]]; then demo_base=/var/tmp; fi
demo=$(mktemp -d "$demo_base/ateam-demo.XXXXXX")
# A root caller's sandbox runs as another uid: it must be able to reach the out dir.
chmod 0755 "$demo"
mkdir -p "$demo/out"
chmod 0755 "$demo"
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$demo"
}
trap cleanup EXIT

# A demo endpoint on host loopback: TLS with a certificate for api.demo.test from a
# throwaway CA, so the agent verifies the real name end to end.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=ateam demo CA" \
  -keyout "$demo/ca.key" -out "$demo/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=api.demo.test" \
  -keyout "$demo/server.key" -out "$demo/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:api.demo.test\n' >"$demo/ext"
openssl x509 -req -in "$demo/server.csr" -CA "$demo/ca.pem" -CAkey "$demo/ca.key" \
  -CAcreateserial -days 1 -extfile "$demo/ext" -out "$demo/server.pem" 2>/dev/null
chmod 0644 "$demo/ca.pem"
port=$((20000 + RANDOM % 20000))
openssl s_server -quiet -accept "127.0.0.1:$port" -cert "$demo/server.pem" \
  -key "$demo/server.key" -www >/dev/null 2>&1 &
server_pid=$!

# The sample repository and its scripted agent.
mkdir -p "$demo/sample"
cat >"$demo/sample/agent.sh" <<'AGENT'
#!/bin/sh
out="$1"
{
  echo "# Dispatch report"
  echo "user:        $(id -un 2>/dev/null || id -u) (uid $(id -u)), host name $(hostname)"
  echo "workspace:   $(pwd): $(ls | tr '\n' ' ')"
  echo "root:        $(ls / | tr '\n' ' ')"
  echo "home:        $HOME ($(ls -A "$HOME" | wc -l) entries, throwaway)"
  echo "processes:   $(ls /proc | grep -c '^[0-9]') visible"
  echo "environment: $(env | cut -d= -f1 | sort | tr '\n' ' ')"
  echo "network:     $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"
  if touch /usr/x 2>/dev/null; then echo "/usr:        WRITABLE"; else echo "/usr:        read-only"; fi
  if curl -sS --max-time 5 --cacert "$DEMO_CA" -o /dev/null -w '%{http_code}' \
       https://api.demo.test/ >/tmp/code 2>/tmp/err; then
    echo "allowed:     https://api.demo.test/ -> HTTP $(cat /tmp/code), TLS verified end to end"
  else
    echo "allowed:     https://api.demo.test/ FAILED: $(cat /tmp/err)"
  fi
  for url in https://example.com/ https://1.1.1.1/ http://127.0.0.1:22/; do
    if curl -sS --max-time 3 -o /dev/null "$url" 2>/tmp/err; then
      echo "other:       $url REACHED (unexpected)"
    else
      echo "other:       $url blocked: $(cut -c1-60 /tmp/err)"
    fi
  done
} >"$out/report.md"
AGENT
chmod 0755 "$demo/sample/agent.sh"
git -C "$demo/sample" init -q
git -C "$demo/sample" add agent.sh
git -C "$demo/sample" -c user.name=demo -c user.email=demo@example.invalid commit -qm "sample"

echo "== ateam-sandbox run: a fresh clone, a scripted agent, one allowed endpoint"
"$sandbox" run --repo "$demo/sample" --workspace-root "$demo/dispatches" \
  --out "$demo/out" --allow "api.demo.test=127.0.0.1:$port" --ro "$demo/ca.pem" \
  --setenv "DEMO_CA=$demo/ca.pem" --status-json "$demo/status.json" \
  -- ./agent.sh "$demo/out" || true
echo
cat "$demo/out/report.md"
echo
echo "== status: $(tr -d '\n ' <"$demo/status.json" | cut -c1-200)..."
