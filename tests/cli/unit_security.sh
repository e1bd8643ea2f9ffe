#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `systemd-analyze security --offline=yes` on a unit file: fails when the overall exposure is
# above MAX (default 3.5 of 10; lower is better). Prints the settings that still cost exposure.
# Usage: unit_security.sh UNIT_FILE [MAX]
set -euo pipefail
unit=$1
max=${2:-3.5}

status=0
report=$(systemd-analyze security --offline=yes --no-pager "$unit" 2>&1) || status=$?
exposure=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9][0-9.]*\).*/\1/p' <<<"$report")
if [ "$status" -ne 0 ] || [ -z "$exposure" ]; then
  echo "FAIL: systemd-analyze security $unit exited $status:" >&2
  echo "$report" >&2
  exit 1
fi
grep '✗' <<<"$report" || true
if awk -v e="$exposure" -v m="$max" 'BEGIN { exit !(e > m) }'; then
  echo "FAIL: exposure $exposure is above $max" >&2
  exit 1
fi
# The same limit through systemd-analyze's own threshold (tenths).
threshold=$(awk -v m="$max" 'BEGIN { printf "%d", m * 10 }')
systemd-analyze security --offline=yes --threshold="$threshold" "$unit" >/dev/null
echo "ok: exposure $exposure <= $max"
