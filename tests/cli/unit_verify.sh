#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `systemd-analyze verify` on a neutracerd unit file: fails on any message, warnings included
# (verify exits 0 for settings it ignores). The unit's ExecStart binary must exist for verify, so
# the check runs in a scratch root holding the host's system units and BINARY at the ExecStart
# path. Usage: unit_verify.sh UNIT_FILE BINARY
set -euo pipefail
unit=$1
binary=$2
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

exec_path=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
[ -n "$exec_path" ] || { echo "FAIL: $unit has no ExecStart=" >&2; exit 1; }
mkdir -p "$root/usr/lib/systemd" "$root/etc/systemd/system" "$root$(dirname "$exec_path")"
# The targets and slices the unit orders itself against (multi-user.target, network.target).
cp -a /usr/lib/systemd/system "$root/usr/lib/systemd/"
rm -f "$root/usr/lib/systemd/system/neutracerd.service" # one installed on this host
cp "$binary" "$root$exec_path"
cp "$unit" "$root/etc/systemd/system/neutracerd.service"

status=0
output=$(systemd-analyze verify --man=no --root="$root" /etc/systemd/system/neutracerd.service 2>&1) ||
  status=$?
if [ "$status" -ne 0 ] || [ -n "$output" ]; then
  echo "FAIL: systemd-analyze verify $unit exited $status:" >&2
  echo "$output" >&2
  exit 1
fi
echo "ok: systemd-analyze verify $unit (ExecStart=$exec_path) reports nothing"
