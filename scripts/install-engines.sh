#!/usr/bin/env bash
# Installs the engines of the engine tier (scripts/engine-tier.sh) from Debian's packages:
# containerd and runc (the runtime under most Kubernetes nodes), Podman (Docker's flags on
# the same runc), busybox-static for the tier's image, a one-node Slurm (munge, slurmctld,
# slurmd, the client commands), and python3-yaml for integration/engines/k8s-shape.py.
#   scripts/install-engines.sh               apt-get install, always (run as root)
#   scripts/install-engines.sh --list        prints the packages (scripts/install-deps.sh)
# Their system services are not used: the tier starts each daemon with its own directories.
set -euo pipefail

packages=(containerd runc podman busybox-static munge slurmctld slurmd slurm-client python3-yaml)

if [[ "${1:-}" == "--list" ]]; then
  echo "${packages[*]}"
  exit 0
fi
[[ $(id -u) -eq 0 ]] || { echo "install-engines: must run as root to install: ${packages[*]}" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends "${packages[@]}"
