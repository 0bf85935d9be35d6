#!/usr/bin/env bash
# The unprivileged user the */user tiers run as (default sbx-ci), made when missing, with a
# subordinate uid and gid range of its own when it has none, so `run --identity subuid` is
# tested there (useradd gives one only where /etc/subuid already exists). Idempotent; root.
set -euo pipefail
user=${1:-sbx-ci}
# Above the ranges useradd hands out from 100000 and below systemd-nspawn's from 524288.
first=${SBX_CI_SUBID_FIRST:-400000}
last=$((first + 65535))
if ! id "$user" >/dev/null 2>&1; then
  echo "ci-user: creating unprivileged user $user"
  useradd --create-home --shell /bin/bash "$user"
fi
if ! grep -q "^$user:" /etc/subuid 2>/dev/null; then
  usermod --add-subuids "$first-$last" "$user"
fi
if ! grep -q "^$user:" /etc/subgid 2>/dev/null; then
  usermod --add-subgids "$first-$last" "$user"
fi
