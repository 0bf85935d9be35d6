#!/usr/bin/env bash
# Syntax-checks the AppArmor profile with apparmor_parser (Debian package apparmor):
#   scripts/check-apparmor.sh [PROFILE]
# PROFILE defaults to packaging/apparmor/ateam-sandbox.in with the package's paths filled
# in. Nothing is loaded: -Q skips the kernel, -K the cache.
#
# The profile uses the `userns` rule of AppArmor 4 (abi/4.0). Debian 12's parser (3.0) knows
# neither the rule nor the ABI file, so there the check runs on a copy with `abi <abi/3.0>`
# and without the `userns,` rule, after making sure that this rule is the only line that
# differs: everything else is checked by the real grammar, and the one rule 3.0 cannot read
# is checked for its exact text. A parser of version 4 or later checks the file as it is.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if ! command -v apparmor_parser >/dev/null; then
  echo "check-apparmor: FAILED: apparmor_parser not found (Debian package apparmor)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
profile=${1:-}
if [[ -z $profile ]]; then
  profile=$work/ateam-sandbox
  sed -e 's|@SBX_APPARMOR_ATTACH@|/usr/{bin/ateam-sandbox,libexec/ateam-sandbox/bwrap}|' \
    "$repo/packaging/apparmor/ateam-sandbox.in" >"$profile"
fi
if grep -n '@[A-Z_]*@' "$profile"; then
  echo "check-apparmor: FAILED: $profile has unsubstituted @VARIABLES@" >&2
  exit 1
fi

version=$(apparmor_parser --version | sed -n 's/^AppArmor parser version \([0-9]*\).*/\1/p')
checked=$profile
if [[ ${version:-0} -lt 4 ]]; then
  checked=$work/abi3
  sed -e 's|^abi <abi/4.0>,$|abi <abi/3.0>,|' -e '/^  userns,$/d' "$profile" >"$checked"
  removed=$(diff "$profile" "$checked" | grep '^<' || true)
  if [[ $removed != $'< abi <abi/4.0>,\n<   userns,' ]]; then
    echo "check-apparmor: FAILED: expected exactly 'abi <abi/4.0>,' and '  userns,' as the" >&2
    echo "AppArmor 4 lines of $profile; found:" >&2
    echo "$removed" >&2
    exit 1
  fi
fi
# The cache and kernel warnings of a host without AppArmor go to stderr; only the status counts.
if ! out=$(apparmor_parser -Q -K "$checked" 2>&1); then
  echo "$out" >&2
  echo "check-apparmor: FAILED: apparmor_parser ${version:-?} rejects $profile" >&2
  exit 1
fi
if [[ $checked == "$profile" ]]; then
  echo "check-apparmor: $profile parses (AppArmor parser $version)"
else
  echo "check-apparmor: $profile parses (AppArmor parser $version: checked with abi/3.0 and without its one 'userns,' rule)"
fi
