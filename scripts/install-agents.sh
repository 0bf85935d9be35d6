#!/usr/bin/env bash
# Installs the real coding agents the integration suite runs inside `ateam-sandbox run`
# (integration/run/agents_test.cc), from the npm registry, into one world-readable prefix:
#   scripts/install-agents.sh [DIR]
#     DIR  default $SBX_AGENTS_DIR, else /opt/ateam-sandbox-agents for root, else
#          ${XDG_CACHE_HOME:-~/.cache}/ateam-sandbox-agents
#   scripts/install-agents.sh --default-dir   prints that default and exits
#   $SBX_CLAUDE_CODE_VERSION  @anthropic-ai/claude-code version (default pinned below)
#   $SBX_OPENCODE_VERSION     opencode-ai version (default pinned below)
#   $SBX_NPM_TIMEOUT          seconds for the whole npm install (default 600)
# The agents end up at DIR/node_modules/.bin/{claude,opencode}; the tests find them through
# SBX_AGENTS_DIR=DIR. Pinned versions keep the fake API server's answers in step with what
# the client expects; an existing install of the same versions is kept as is.
#
# Exit status: 0 when the agents are installed; 3 when the npm registry cannot be reached
# (a loud "SKIP: ..." line; the agent tests then skip with a message naming DIR, and
# scripts/test.sh lets them); 1 when the registry answers but npm is missing, the install
# fails or the installed agents do not run (a real failure: CI must not turn it into a
# skip); 2 on bad usage. It never leaves a half-installed DIR.
set -euo pipefail

claude_version=${SBX_CLAUDE_CODE_VERSION:-2.1.197}
opencode_version=${SBX_OPENCODE_VERSION:-1.18.33}
npm_timeout=${SBX_NPM_TIMEOUT:-600}

if [[ $# -gt 1 || ${1:-} == -* && ${1:-} != --default-dir ]]; then
  echo "usage: scripts/install-agents.sh [DIR | --default-dir]" >&2
  exit 2
fi
if [[ $(id -u) -eq 0 ]]; then
  default_dir=/opt/ateam-sandbox-agents
else
  default_dir=${XDG_CACHE_HOME:-$HOME/.cache}/ateam-sandbox-agents
fi
if [[ ${1:-} == --default-dir ]]; then
  echo "$default_dir"
  exit 0
fi
dir=${1:-${SBX_AGENTS_DIR:-$default_dir}}
[[ $dir == /* ]] || dir="$PWD/$dir"
stamp="claude-code@$claude_version opencode-ai@$opencode_version"

skip() {
  echo "install-agents: ##################################################################" >&2
  echo "install-agents: SKIP: $*" >&2
  echo "install-agents: the agent tests (claude, opencode inside run) will be SKIPPED" >&2
  echo "install-agents: ##################################################################" >&2
  exit 3
}
fail() {
  echo "install-agents: FAILED: $*" >&2
  exit 1
}

# Every agent answers --version from the install; a postinstall that npm did not run (npm's
# script policy, --ignore-scripts) leaves a stub that fails, so run it by hand once.
agents_work() {
  timeout 60 "$1/node_modules/.bin/claude" --version >/dev/null 2>&1 &&
    timeout 60 "$1/node_modules/.bin/opencode" --version >/dev/null 2>&1
}
run_postinstalls() {
  local pkg script
  for pkg in "$1/node_modules/@anthropic-ai/claude-code" "$1/node_modules/opencode-ai"; do
    script=$(cd "$pkg" && node -p 'require("./package.json").scripts?.postinstall ?? ""')
    if [[ -n "$script" ]]; then
      (cd "$pkg" && timeout 120 sh -c "$script") >/dev/null 2>&1 || true
    fi
  done
}

if [[ -f "$dir/.sbx-agents" && $(cat "$dir/.sbx-agents") == "$stamp" ]] && agents_work "$dir"; then
  echo "install-agents: $stamp already in $dir"
  exit 0
fi

command -v npm >/dev/null 2>&1 || fail "npm is not installed (scripts/install-deps.sh installs it)"
command -v node >/dev/null 2>&1 || fail "node is not installed (scripts/install-deps.sh installs it)"
registry=$(npm config get registry 2>/dev/null || echo "the npm registry")
ping_rc=0
ping_out=$(timeout 40 npm ping --fetch-retries=1 --fetch-timeout=15000 2>&1) || ping_rc=$?
if [[ $ping_rc -eq 124 ]]; then
  skip "npm registry unreachable (npm ping $registry: no answer in 40s)"
elif [[ $ping_rc -ne 0 ]]; then
  skip "npm registry unreachable (npm ping $registry: $(grep -m1 -iE 'err|error' <<<"$ping_out" || tail -n1 <<<"$ping_out"))"
fi

# Everything readable and runnable by other users: root's tests run the agents as uid
# 65534, and the matrix's unprivileged tier as its own user.
umask 022
mkdir -p "$(dirname "$dir")"
tmp=$(mktemp -d "$dir.tmp.XXXXXX")
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
chmod 0755 "$tmp"

echo "install-agents: installing $stamp into $dir (timeout ${npm_timeout}s)"
start=$(date +%s)
log="$tmp/npm.log"
if ! timeout "$npm_timeout" npm install --prefix "$tmp" --no-audit --no-fund --no-save \
  --loglevel=error "@anthropic-ai/claude-code@$claude_version" "opencode-ai@$opencode_version" \
  >"$log" 2>&1; then
  tail -n 5 "$log" >&2 || true
  fail "npm install failed or timed out although the registry answered (log above)"
fi
agents_work "$tmp" || run_postinstalls "$tmp"
if ! agents_work "$tmp"; then
  fail "the installed agents do not run (--version failed after their postinstall)"
fi
rm -f "$log"
echo "$stamp" >"$tmp/.sbx-agents"
chmod -R a+rX "$tmp"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
echo "install-agents: $("$dir/node_modules/.bin/claude" --version), opencode" \
  "$("$dir/node_modules/.bin/opencode" --version) in $dir ($(($(date +%s) - start))s)"
