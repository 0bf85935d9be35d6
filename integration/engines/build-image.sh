#!/usr/bin/env bash
# Builds the engine tier's image: a root file system directory, no registry, no layers.
#   integration/engines/build-image.sh BUILD_DIR ROOTFS
# Holds busybox (static) for the shell and tools, the static ateam-sandbox and probe of
# BUILD_DIR, run_netclient, git, bwrap and setpriv with the libraries they load, a one-commit repository at
# /image/repo for --repo, and the checks of integration/engines/ below /usr/share/engines.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "$1" && pwd)
root=$2

[[ -x /bin/busybox ]] || { echo "build-image: /bin/busybox missing (package busybox-static)" >&2; exit 1; }
rm -rf "$root"
mkdir -p "$root"/{bin,usr/bin,usr/lib/git-core,usr/share/engines,etc,proc,sys,dev,run,root,tmp,var/tmp,dispatches,image}
chmod 1777 "$root/tmp" "$root/var/tmp"

install -m 0755 /bin/busybox "$root/bin/busybox"
for applet in $(/bin/busybox --list); do
  [[ -e "$root/bin/$applet" ]] || ln -s busybox "$root/bin/$applet"
done

# The binaries under test, without their debug sections (the image stays small).
for exe in "$build/ateam-sandbox" "$build/integration/probe" "$build/integration/run/run_netclient"; do
  [[ -x "$exe" ]] || { echo "build-image: $exe not built" >&2; exit 1; }
  install -m 0755 "$exe" "$root/usr/bin/"
  strip --strip-debug "$root/usr/bin/$(basename "$exe")"
done
# git: the one executable is every builtin, upload-pack included (a local clone runs it).
install -m 0755 /usr/bin/git "$root/usr/bin/git"
# Debian's bwrap, for run --backend bwrap.
install -m 0755 /usr/bin/bwrap "$root/usr/bin/bwrap"
# util-linux setpriv (busybox's cannot change ids), for masked-proc.sh.
install -m 0755 /usr/bin/setpriv "$root/usr/bin/setpriv"
ln -s ../../bin/git "$root/usr/lib/git-core/git-upload-pack"
ln -s ../../bin/git "$root/usr/lib/git-core/git"
# The shared libraries of the dynamic ones, at the paths the loader looks them up.
for exe in /usr/bin/git /usr/bin/bwrap /usr/bin/setpriv "$build/integration/run/run_netclient"; do
  ldd "$exe" | grep -o '/[^ ]*'
done | sort -u | while read -r lib; do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done

printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
: >"$root/etc/hosts"
: >"$root/etc/resolv.conf"

install -m 0755 "$here/in-container.sh" "$here/in-sandbox.sh" "$here/masked-proc.sh" \
  "$here/masked-proc-inside.sh" "$root/usr/share/engines/"

git_c=(git -c user.name=engines -c user.email=engines@example.invalid -c init.defaultBranch=main)
"${git_c[@]}" init -q "$root/image/repo"
echo "cloned from the image" >"$root/image/repo/README"
"${git_c[@]}" -C "$root/image/repo" add README
"${git_c[@]}" -C "$root/image/repo" commit -qm "one commit"
