#!/usr/bin/env bash
# Installs every Debian package the project needs to build and test (run as root).
#   scripts/install-deps.sh               apt-get update + install, always
#   scripts/install-deps.sh --if-missing  only when some package is not installed yet
# Used by .ci/run, scripts/test.sh and the README's demo command.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libcap-dev libseccomp-dev libnl-3-dev libnl-route-3-dev libfmt-dev libcli11-dev
  libhttp-parser-dev libssl-dev  # broker routes: the HTTP/1.1 parser and TLS to the upstream
  libgtest-dev libgmock-dev googletest
  bubblewrap socat openssl curl iproute2 git
  clang-format clang-tidy
  clang libclang-rt-14-dev  # the clang build and the libFuzzer targets (scripts/fuzz.sh)
  apparmor  # apparmor_parser, to check the AppArmor profile (scripts/check-apparmor.sh)
  dpkg-dev file  # cpack -G DEB: dpkg-shlibdeps and file (scripts/package-test.sh)
  passwd util-linux  # useradd and runuser, for the unprivileged tier of scripts/run_matrix.sh
  strace  # run_test traces a dry run: it must start, bind and create nothing
  uidmap  # newuidmap/newgidmap: run_test maps a subordinate id range, as rootless Podman does
  python3  # the fake api.anthropic.com of run_test's agent tests (integration/run/agents/)
  nodejs   # npm installs the real agents for the agent tests (scripts/install-agents.sh)
  dpkg-dev patch libcap2-bin python3-seccomp  # scripts/bwrap-upstream-tests.sh (bubblewrap's tests)
  # The real ssh client and server of run_test's route test: the test starts its own sshd
  # on a loopback port with host keys it makes in a temporary directory, so neither the
  # ssh service nor /etc/ssh's keys are used (the package may start that service; see
  # docs/packaging.md).
  openssh-client openssh-server
  ccache  # scripts/test.sh, fuzz.sh and package-test.sh compile through it when installed
)
# containerd, runc, Podman, Slurm and the rest of the engine tier (scripts/engine-tier.sh).
read -r -a engine_packages <<<"$("$(dirname "${BASH_SOURCE[0]}")/install-engines.sh" --list)"
packages+=("${engine_packages[@]}")
# Debian's npm, unless a Node.js that brings its own npm is installed already (NodeSource's
# nodejs package ships /usr/bin/npm and conflicts with Debian's npm package).
if ! command -v npm >/dev/null 2>&1; then
  packages+=(npm)
fi

if [[ "${1:-}" == "--if-missing" ]]; then
  missing=()
  for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
  fi
  echo "install-deps: missing packages: ${missing[*]}"
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: must run as root to install: ${packages[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y "${packages[@]}"
