#!/usr/bin/env bash
# Runs bubblewrap's own test scripts against our bwrap executable (native backend), as root
# and as an unprivileged user:
#   scripts/bwrap-upstream-tests.sh [BWRAP]
#     BWRAP  the binary under test (default <build>/compat/bwrap, build dir $SBX_BUILD_DIR,
#            default <repo>/build)
#   $SBX_CI_USER                the unprivileged user (default sbx-ci; created when missing)
#   $SBX_BWRAP_UPSTREAM_CACHE   where the source is kept (default
#                               /var/cache/ateam-sandbox/bwrap-upstream for root, else
#                               ${XDG_CACHE_HOME:-~/.cache}/ateam-sandbox/bwrap-upstream)
#   $SBX_DEBIAN_MIRROR          Debian mirror URI for the source (default: the one apt uses)
#
# The tests come from Debian's source package of bubblewrap, the version installed here
# (0.8.0 on Debian 12), fetched with apt-get source through a scratch apt configuration
# (its own deb-src list, index and cache; the system's apt state is not touched) and
# unpacked with dpkg-source into the cache, never into the repository. Each run copies the
# tests into a fresh world-readable directory, applies our patches from
# scripts/bwrap-upstream/ (tests that depend on bwrap's internal call sequence, rewritten
# to keep their intent; docs/bwrap-compat.md lists them), builds the helper programs with
# cc, and runs tests/test-run.sh, test-specifying-userns.sh, test-specifying-pidns.sh and
# test-seccomp.py with BWRAP pointing at a copy of the binary under test.
#
# Exits non-zero when any test fails, when a script stops before its TAP plan is done, or
# when the source cannot be fetched or patched. Only when the Debian mirror cannot be
# reached at all does it print a loud SKIP line and exit 0.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
patches="$repo/scripts/bwrap-upstream"
ci_user=${SBX_CI_USER:-sbx-ci}
build=${SBX_BUILD_DIR:-$repo/build}
bwrap=${1:-$build/compat/bwrap}
if [[ $(id -u) -eq 0 ]]; then
  cache=${SBX_BWRAP_UPSTREAM_CACHE:-/var/cache/ateam-sandbox/bwrap-upstream}
else
  cache=${SBX_BWRAP_UPSTREAM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ateam-sandbox/bwrap-upstream}
fi
scripts=(test-run.sh test-specifying-userns.sh test-specifying-pidns.sh test-seccomp.py)

say() { echo "bwrap-upstream: $*"; }
die() {
  echo "bwrap-upstream: FAILED: $*" >&2
  exit 1
}

[[ -x "$bwrap" ]] || die "$bwrap is not an executable (build the bwrap target first)"
for tool in apt-get dpkg-source patch cc; do
  command -v "$tool" >/dev/null || die "$tool is missing (scripts/install-deps.sh installs it)"
done

work=$(mktemp -d /tmp/sbx-bwrap-upstream.XXXXXX)

# Kills what a failed test script left running: its background sandboxes wait on a fifo
# the script never writes after a failure. Only processes of this run's copy of the binary
# (their pid-1 reaper goes with them, and the pid namespace with it); prints how many.
reap_leftovers() {
  local proc count=0
  for proc in /proc/[0-9]*; do
    if [[ $(readlink "$proc/exe" 2>/dev/null) == "$work/bwrap" ]]; then
      kill -KILL "${proc#/proc/}" 2>/dev/null && count=$((count + 1))
    fi
  done
  echo "$count"
}
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  reap_leftovers >/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# ---- The source: Debian's bubblewrap package, in the cache ----

# deb-src lines for this release's suites, from the deb entries apt already uses (one-line
# .list files and deb822 .sources files), or from $SBX_DEBIAN_MIRROR.
deb_src_lines() {
  local codename=$1
  if [[ -n "${SBX_DEBIAN_MIRROR:-}" ]]; then
    echo "deb-src $SBX_DEBIAN_MIRROR $codename main"
    return
  fi
  local file
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f "$file" ]] || continue
    awk -v codename="$codename" '
      $1 == "deb" {
        i = 2; opts = ""
        if ($2 ~ /^\[/) { while ($i !~ /\]$/) { opts = opts $i " "; i++ } opts = opts $i " "; i++ }
        uri = $i; suite = $(i + 1); comps = ""
        for (j = i + 2; j <= NF && $j !~ /^#/; j++) comps = comps " " $j
        if (suite == codename || index(suite, codename "-") == 1)
          print "deb-src " opts uri " " suite comps
      }' "$file"
  done
  for file in /etc/apt/sources.list.d/*.sources; do
    [[ -f "$file" ]] || continue
    awk -v codename="$codename" '
      function flush(   n, u, s, uris, suites, k, l, opts) {
        if (types ~ /(^| )deb( |$)/ && enabled != "no") {
          opts = signed != "" ? "[signed-by=" signed "] " : ""
          n = split(uri_list, uris, " "); k = split(suite_list, suites, " ")
          for (u = 1; u <= n; u++) for (l = 1; l <= k; l++)
            if (suites[l] == codename || index(suites[l], codename "-") == 1)
              print "deb-src " opts uris[u] " " suites[l] " " comps
        }
        types = uri_list = suite_list = comps = signed = enabled = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ +/, "") }
      key == "types" { types = $0 } key == "uris" { uri_list = $0 }
      key == "suites" { suite_list = $0 } key == "components" { comps = $0 }
      key == "signed-by" { signed = $0 } key == "enabled" { enabled = tolower($0) }
      END { flush() }' "$file"
  done
}

# The mirror could not be reached at all (as opposed to answering with an error).
unreachable() {
  grep -qE 'Could not resolve|Temporary failure resolving|Could not connect|Connection timed out|Connection refused|Network is unreachable|No route to host|Unable to connect' "$1"
}

fetch_source() {
  local version=$1 dest=$2
  local codename
  # shellcheck disable=SC1091  # the running system's file
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [[ -n "$codename" ]] || die "no VERSION_CODENAME in /etc/os-release"
  local apt="$work/apt"
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/src"
  deb_src_lines "$codename" >"$apt/sources.list"
  [[ -s "$apt/sources.list" ]] ||
    die "no Debian mirror for $codename in /etc/apt/sources.list(.d) (set SBX_DEBIAN_MIRROR)"
  say "deb-src lines:"
  sed 's/^/  /' "$apt/sources.list"
  local opts=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o "Dir::Etc::sourceparts=$apt/none"
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "Dir::Cache::pkgcache="
    -o "Dir::Cache::srcpkgcache=" -o "APT::Sandbox::User=$(id -un)"
    -o "APT::Update::Error-Mode=any")
  if ! apt-get "${opts[@]}" update >"$apt/update.log" 2>&1; then
    cat "$apt/update.log" >&2
    if unreachable "$apt/update.log"; then
      echo
      echo "bwrap-upstream: SKIP: the Debian mirror cannot be reached; bubblewrap's own tests DID NOT RUN"
      echo
      exit 0
    fi
    die "apt-get update of the deb-src lists failed"
  fi
  # The installed version's tests; a mirror that has moved on to a newer point release
  # only has that one.
  local wanted
  for wanted in ${version:+"bubblewrap=$version"} bubblewrap; do
    if (cd "$apt/src" && apt-get "${opts[@]}" source --download-only "$wanted") >"$apt/source.log" 2>&1; then
      break
    fi
    cat "$apt/source.log" >&2
    [[ $wanted == bubblewrap ]] && die "apt-get source bubblewrap failed"
    say "$wanted is not on the mirror; taking its current bubblewrap source instead"
  done
  local dsc
  dsc=$(find "$apt/src" -maxdepth 1 -name 'bubblewrap_*.dsc' | head -n1)
  [[ -n "$dsc" ]] || die "apt-get source left no .dsc in $apt/src"
  rm -rf "$dest.tmp"
  dpkg-source -x "$dsc" "$dest.tmp" >"$apt/unpack.log" 2>&1 || {
    cat "$apt/unpack.log" >&2
    die "dpkg-source -x $dsc failed"
  }
  mv "$dest.tmp" "$dest"
}

version=$(dpkg-query -W -f='${Version}' bubblewrap 2>/dev/null || true)
src="$cache/bubblewrap-${version:-candidate}"
if [[ ! -f "$src/tests/test-run.sh" ]]; then
  say "fetching Debian's source of bubblewrap ${version:-(candidate version)} into $cache"
  mkdir -p "$cache"
  fetch_source "$version" "$src"
fi
say "source: $src"

# ---- A world-readable copy of the tests, patched, with its helpers built ----

tests="$work/tests"
cp -a "$src/tests" "$tests"
for p in "$patches"/*.patch; do
  [[ -f "$p" ]] || continue
  say "applying $(basename "$p")"
  patch --quiet --forward -p1 -d "$work" <"$p" || die "$(basename "$p") does not apply to $src"
done
cc -O2 -o "$tests/try-syscall" "$tests/try-syscall.c" || die "cc try-syscall.c failed"
install -m 0755 "$bwrap" "$work/bwrap"
chmod -R a+rX "$work"

# ---- Running the scripts ----

declare -a summary=()
overall=0

# Runs test script $2 as user $1 and checks its TAP output against its plan.
run_script() {
  local user=$1 script=$2
  local log="$work/logs/$user-$script.log"
  local runner=(bash)
  [[ $script == *.py ]] && runner=(/usr/bin/python3)
  local as_user=()
  [[ $user != "$(id -un)" ]] && as_user=(runuser -u "$user" --)
  echo
  echo "=== bubblewrap tests: $script, caller $user ==="
  set +e
  "${as_user[@]}" env -C "$work" BWRAP="$work/bwrap" timeout 1200 \
    "${runner[@]}" "$tests/$script" >"$log" 2>&1
  local rc=$?
  set -e
  local leftovers
  leftovers=$(reap_leftovers)
  [[ $leftovers -eq 0 ]] || echo "bwrap-upstream: killed $leftovers leftover sandbox processes of $script"
  grep -E '^(ok|not ok|1\.\.)' "$log" || true
  local planned ok not_ok skipped
  planned=$(sed -nE 's/^1\.\.([0-9]+).*/\1/p' "$log" | head -n1)
  ok=$(grep -cE '^ok' "$log" || true)
  not_ok=$(grep -cE '^not ok' "$log" || true)
  skipped=$(grep -ciE '^(ok|1\.\.).*# *SKIP' "$log" || true)
  local line="$script, caller $user: $ok ok ($skipped skipped), $not_ok not ok, plan ${planned:-none}"
  if [[ $rc -ne 0 || $not_ok -ne 0 || -z "$planned" || $((ok + not_ok)) -lt $planned ]]; then
    echo "--- last lines of $script (exit $rc) ---"
    tail -n 40 "$log"
    summary+=("FAIL  $line (exit $rc)")
    overall=1
  else
    summary+=("ok    $line")
  fi
}

callers=("$(id -un)")
if [[ $(id -u) -eq 0 ]]; then
  if ! id "$ci_user" >/dev/null 2>&1; then
    say "creating unprivileged user $ci_user"
    useradd --create-home --shell /bin/bash "$ci_user"
  fi
  callers+=("$ci_user")
else
  say "not root: running only as $(id -un); the root tier is not covered" >&2
fi
mkdir -p "$work/logs"
chmod 0777 "$work/logs"
for user in "${callers[@]}"; do
  for script in "${scripts[@]}"; do
    run_script "$user" "$script"
  done
done

echo
echo "=== bubblewrap ${version:-candidate} upstream tests against $bwrap ==="
printf '%s\n' "${summary[@]}"
exit "$overall"
