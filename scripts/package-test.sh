#!/usr/bin/env bash
# Builds the .deb and tries it on this machine (as root; Debian 12):
#   1. configure build-package/ as the `package` preset (Release, /usr, no tests) and build
#   2. cpack -G DEB; check the control fields and that every installed file is in it,
#      including the AppArmor profile, which apparmor_parser must accept
#      (scripts/check-apparmor.sh)
#   3. dpkg -i; from the installed files: --version (the project's version), the man page,
#      doctor, the bwrap face, a tiny `run --workspace` dispatch, and the demo
#      (scripts/demo.sh with SBX_DEMO_BIN=/usr/bin/ateam-sandbox: clone, tunnel, report)
#   4. dpkg -r, then dpkg --purge: nothing of the package is left
#   5. with $SBX_PACKAGE_TEST_ROOT set to a clean Debian 12 root, made with
#        debootstrap --variant=minbase bookworm DIR http://deb.debian.org/debian
#      also in there, entered with bwrap: apt-get install of the .deb (its dependencies
#      from the mirror), --version, doctor, a dispatch, apt-get purge. The root keeps apt's
#      downloads and the dependencies; the package itself is purged again.
#   scripts/package-test.sh [BUILD_DIR]
#   0. `cmake --install` into a scratch DESTDIR, with and without SBX_INSTALL_BWRAP_NAME:
#      the bwrap face is libexec/ateam-sandbox/bwrap either way and runs; the option adds
#      bin/bwrap, a relative symlink to it, which runs too
# BUILD_DIR: package from an existing build (scripts/test.sh passes build/, so nothing is
# compiled twice): it is reconfigured with the package's install settings (prefix /usr),
# which changes no object file. Without it, build-package/ is
# configured as the `package` preset (Release) and built. The .deb is left in that
# directory. $SBX_JOBS sets the build parallelism (default 2).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
jobs=${SBX_JOBS:-2}
build=${1:-build-package}

fail() {
  echo "package-test: FAILED: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || fail "must run as root (dpkg -i)"
if dpkg-query -W -f='${Status}' ateam-sandbox 2>/dev/null | grep -q installed; then
  fail "ateam-sandbox is already installed as a package; remove it first"
fi

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
if [[ $# -eq 0 ]]; then
  cmake --preset package "${launcher[@]}" >/dev/null
else
  [[ -f $build/CMakeCache.txt ]] || fail "$build is not a configured build"
  # The install settings of the `package` preset (CMakePresets.json).
  cmake -S . -B "$build" -DCMAKE_INSTALL_PREFIX=/usr -DSBX_INSTALL_BWRAP_NAME=OFF \
    -DSBX_BWRAP_NAME_DIR=bin >/dev/null
fi
# The static executable's link warns that NSS loads the host glibc's modules: expected.
build_install_targets() {
  cmake --build "$build" -j"$jobs" --target ateam-sandbox bwrap sbx_man_page 2>&1 |
    grep -v -e 'in statically linked applications' -e '^/usr/bin/ld: .*: in function' || true
}
build_install_targets
[[ -x $build/ateam-sandbox ]] || fail "$build/ateam-sandbox was not built"

# `cmake --install` (what the .deb is made of): the bwrap face by default, the PATH name on
# request. $1: the DESTDIR, $2: ON or OFF for SBX_INSTALL_BWRAP_NAME.
check_install() {
  local dest=$1 name=$2 out
  cmake -S . -B "$build" -DSBX_INSTALL_BWRAP_NAME="$name" >/dev/null
  build_install_targets
  DESTDIR=$dest cmake --install "$build" >/dev/null
  [[ -x $dest/usr/libexec/ateam-sandbox/bwrap && ! -L $dest/usr/libexec/ateam-sandbox/bwrap ]] ||
    fail "cmake --install (SBX_INSTALL_BWRAP_NAME=$name) did not install libexec/ateam-sandbox/bwrap"
  local faces=("$dest/usr/libexec/ateam-sandbox/bwrap")
  if [[ $name == ON ]]; then
    [[ $(readlink "$dest/usr/bin/bwrap") == ../libexec/ateam-sandbox/bwrap ]] ||
      fail "SBX_INSTALL_BWRAP_NAME=ON: bin/bwrap is not the relative link to the face"
    faces+=("$dest/usr/bin/bwrap")
  else
    [[ ! -e $dest/usr/bin/bwrap ]] || fail "SBX_INSTALL_BWRAP_NAME=OFF installed bin/bwrap"
  fi
  local face
  for face in "${faces[@]}"; do
    out=$("$face" --version) || fail "the installed bwrap face $face does not run"
    [[ $out == "bubblewrap 0.11.1" ]] || fail "the installed $face prints '$out'"
    "$face" --ro-bind / / --unshare-all -- /bin/true || fail "the installed $face could not run /bin/true"
  done
}
install_check=$(mktemp -d)
check_install "$install_check/with-name" ON
check_install "$install_check/default" OFF
rm -rf "$install_check"
echo "package-test: cmake --install puts the bwrap face in libexec/ateam-sandbox, and on PATH with SBX_INSTALL_BWRAP_NAME; both run"
rm -f "$build"/ateam-sandbox_*.deb
(cd "$build" && cpack -G DEB >/dev/null)
deb=$(ls "$build"/ateam-sandbox_*.deb)
version=$(sed -n 's/^project(ateam-sandbox VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
echo "package-test: built $deb"

# The control fields.
field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Version) == "$version" ]] || fail "Version is '$(field Version)', not $version"
depends=$(field Depends)
[[ $depends == *"libc6 (>= "* && $depends == *git* ]] || fail "Depends lacks libc6 or git: $depends"
[[ $(field Suggests) == *bubblewrap* ]] || fail "Suggests lacks bubblewrap: $(field Suggests)"
echo "package-test: Depends: $depends; Suggests: $(field Suggests)"

# The files.
contents=$(dpkg-deb -c "$deb")
for path in ./usr/bin/ateam-sandbox ./usr/share/man/man1/ateam-sandbox.1.gz \
  ./usr/share/bash-completion/completions/ateam-sandbox ./etc/apparmor.d/ateam-sandbox \
  ./usr/libexec/ateam-sandbox/bwrap; do
  grep -qF -- " $path" <<<"$contents" || fail "$path is not in the package"
done
# run puts dispatch directories only below directories owned by root or the caller: where
# /tmp belongs to someone else (some containers give it to the overflow uid), use /var/tmp.
scratch_base=/tmp
if [[ $(stat -c %u /tmp) != 0 && $(stat -c %u /tmp) != $(id -u) ]]; then scratch_base=/var/tmp; fi
unpacked=$(mktemp -d "$scratch_base/sbx-package.XXXXXX")
installed=""
cleanup() {
  rm -rf "$unpacked"
  if [[ -n $installed ]]; then dpkg --purge ateam-sandbox >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
dpkg-deb -x "$deb" "$unpacked"
dpkg-deb -e "$deb" "$unpacked/DEBIAN"
grep -qx /etc/apparmor.d/ateam-sandbox "$unpacked/DEBIAN/conffiles" ||
  fail "the AppArmor profile is not a conffile"
scripts/check-apparmor.sh "$unpacked/etc/apparmor.d/ateam-sandbox"

# Installed: everything below runs the files dpkg put in place.
installed=yes
dpkg -i "$deb" >/dev/null
out=$(/usr/bin/ateam-sandbox --version)
[[ $out == "ateam-sandbox $version" ]] || fail "--version prints '$out'"
zcat /usr/share/man/man1/ateam-sandbox.1.gz | grep -q "^\.TH ATEAM-SANDBOX 1 .*\"ateam-sandbox $version\"" ||
  fail "the man page does not carry version $version"
bash -n /usr/share/bash-completion/completions/ateam-sandbox
if ! /usr/bin/ateam-sandbox doctor >"$unpacked/doctor.txt" 2>&1; then
  cat "$unpacked/doctor.txt" >&2
  fail "ateam-sandbox doctor reports a failure"
fi
echo "package-test: installed; $out; doctor passes"
out=$(/usr/libexec/ateam-sandbox/bwrap --version)
[[ $out == "bubblewrap 0.11.1" ]] || fail "the bwrap face prints '$out'"
/usr/libexec/ateam-sandbox/bwrap --ro-bind / / --unshare-all -- /bin/true ||
  fail "the bwrap face could not run /bin/true"

workspace=$(mktemp -d "$unpacked/ws.XXXXXX")
chmod 0755 "$unpacked" "$workspace"
/usr/bin/ateam-sandbox run --workspace "$workspace" --workspace-root "$unpacked/dispatches" \
  --no-default-allow -- /bin/sh -c 'echo "from the sandbox" >result' ||
  fail "a run --workspace dispatch failed"
[[ $(cat "$workspace/result" 2>/dev/null) == "from the sandbox" ]] ||
  fail "the dispatch left no result in its workspace"
echo "package-test: the bwrap face and a run --workspace dispatch work"

SBX_DEMO_BIN=/usr/bin/ateam-sandbox scripts/demo.sh >"$unpacked/demo.txt" 2>&1 || true
if ! grep -q 'TLS verified end to end' "$unpacked/demo.txt"; then
  cat "$unpacked/demo.txt" >&2
  fail "the demo did not reach its endpoint through the tunnel"
fi
echo "package-test: the demo runs from the installed files"

dpkg -r ateam-sandbox >/dev/null
[[ ! -e /usr/bin/ateam-sandbox && ! -e /usr/libexec/ateam-sandbox/bwrap ]] ||
  fail "dpkg -r left the executables"
dpkg --purge ateam-sandbox >/dev/null
installed=""
[[ ! -e /etc/apparmor.d/ateam-sandbox && ! -e /etc/apparmor.d/disable/ateam-sandbox ]] ||
  fail "dpkg --purge left the AppArmor profile"
echo "package-test: removed and purged cleanly"

if [[ -n ${SBX_PACKAGE_TEST_ROOT:-} ]]; then
  root=$SBX_PACKAGE_TEST_ROOT
  [[ -x $root/usr/bin/apt-get ]] || fail "$root is not a Debian root (no apt-get)"
  command -v bwrap >/dev/null || fail "bwrap is needed to enter $root"
  # debootstrap writes no /etc/hosts (the installer does); a dispatch mounts its own over it.
  [[ -e $root/etc/hosts ]] || printf '127.0.0.1\tlocalhost\n' >"$root/etc/hosts"
  # bwrap, not chroot: a chrooted process may not create user namespaces. The host's /proc,
  # bound whole: the kernel lets the sandbox mount a fresh proc only where one is fully
  # visible already. /tmp world-writable, for apt's unprivileged helper.
  bwrap --bind "$root" / --bind /proc /proc --dev /dev --perms 01777 --tmpfs /tmp \
    --ro-bind /etc/resolv.conf /etc/resolv.conf --ro-bind "$deb" "/tmp/$(basename "$deb")" \
    --setenv DEBIAN_FRONTEND noninteractive --setenv PATH /usr/sbin:/usr/bin:/sbin:/bin \
    -- /bin/sh -euc '
      deb=/tmp/$1
      apt-get update -qq
      apt-get install -y -qq --no-install-recommends "$deb" >/dev/null
      echo "package-test: clean root: $(ateam-sandbox --version), Depends pulled in: \
$(dpkg-query -W -f="\${Depends}" ateam-sandbox)"
      ateam-sandbox doctor >/tmp/doctor.txt 2>&1 || { cat /tmp/doctor.txt; exit 1; }
      mkdir -m 0755 /tmp/ws
      ateam-sandbox run --workspace /tmp/ws --workspace-root /tmp/d --no-default-allow \
        -- /bin/sh -c "echo ok >result"
      test "$(cat /tmp/ws/result)" = ok
      apt-get purge -y -qq ateam-sandbox >/dev/null
      test ! -e /usr/bin/ateam-sandbox
    ' sh "$(basename "$deb")" || fail "the package does not work in the clean root $root"
  echo "package-test: installed, ran doctor and a dispatch, and purged in the clean root $root"
fi
