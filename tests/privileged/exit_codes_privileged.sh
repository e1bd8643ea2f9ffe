#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Exit codes of the real daemon when the host cannot trace, as systemd sees them (run as root):
# capabilities dropped with capsh -> 3 and a message naming what is missing; kernel BTF hidden
# by a bind mount in a private mount namespace -> 4 naming CONFIG_DEBUG_INFO_BTF; a bad config
# -> 2; and the unit lists 2, 3 and 4 in RestartPreventExitStatus=.
# Usage: exit_codes_privileged.sh NEUTRACERD CONFIGURED_UNIT
set -u
bin=$1
unit=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
port=$((20000 + RANDOM % 10000))

expect() { # expect CODE DESCRIPTION PATTERN... -- COMMAND...: every PATTERN in the output
  local code=$1 description=$2
  shift 2
  local patterns=()
  while [ "$1" != -- ]; do
    patterns+=("$1")
    shift
  done
  shift
  local output status
  output=$(timeout 60 "$@" 2>&1)
  status=$?
  local missing=()
  for pattern in "${patterns[@]}"; do
    grep -qE -- "$pattern" <<<"$output" || missing+=("$pattern")
  done
  if [ "$status" -ne "$code" ] || [ ${#missing[@]} -ne 0 ]; then
    echo "FAIL: $description -> exit $status (want $code), missing: ${missing[*]}; output:"
    echo "$output"
    failures=$((failures + 1))
  else
    echo "ok: $description -> exit $code"
  fi
}

if [ "$(id -u)" -ne 0 ]; then
  echo "FAIL: needs root (it drops capabilities and mounts)"
  exit 1
fi
run=("$bin" --listen "127.0.0.1:$port" --scan-interval 500ms)
privilege_message=(CAP_SYS_ADMIN CAP_BPF CAP_PERFMON kernel\\.perf_event_paranoid)

# Without CAP_SYS_ADMIN the programs still load (CAP_BPF, CAP_PERFMON), but no uprobe can be
# created: the daemon must stop at start rather than run without probes.
expect 3 "without CAP_SYS_ADMIN" "${privilege_message[@]}" 'cannot create a uprobe' -- \
  capsh --drop=cap_sys_admin -- -c 'exec "$@"' neutracerd "${run[@]}"
expect 3 "without CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON" "${privilege_message[@]}" -- \
  capsh --drop=cap_sys_admin,cap_bpf,cap_perfmon -- -c 'exec "$@"' neutracerd "${run[@]}"

: >"$dir/empty"
# shellcheck disable=SC2016 # expanded by the inner shell
expect 4 "kernel BTF hidden" 'BTF' 'CONFIG_DEBUG_INFO_BTF=y' '/sys/kernel/btf/vmlinux' -- \
  unshare --mount sh -c 'mount --bind "$0" /sys/kernel/btf/vmlinux && exec "$@"' \
  "$dir/empty" "${run[@]}"

printf 'scan_interval: 1ms\n' >"$dir/bad.yaml"
expect 2 "bad config" 'scan_interval' -- "${run[@]}" --config "$dir/bad.yaml"

# The same daemon with every privilege starts: the failures above are the dropped privileges.
"${run[@]}" >"$dir/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 300); do
  grep -q 'listening on' "$dir/daemon.log" && break
  kill -0 "$daemon" 2>/dev/null || break
  sleep 0.2
done
if grep -q 'listening on' "$dir/daemon.log"; then
  kill -TERM "$daemon"
  wait "$daemon"
  status=$?
  if [ "$status" -eq 0 ]; then
    echo "ok: with every privilege it starts and stops with 0"
  else
    echo "FAIL: SIGTERM exit $status"
    failures=$((failures + 1))
  fi
else
  kill -KILL "$daemon" 2>/dev/null
  wait "$daemon"
  echo "FAIL: with every privilege it did not start:"
  cat "$dir/daemon.log"
  failures=$((failures + 1))
fi

prevent=$(sed -n 's/^RestartPreventExitStatus=//p' "$unit")
for code in 2 3 4; do
  grep -qw "$code" <<<"$prevent" ||
    { echo "FAIL: RestartPreventExitStatus=$prevent lacks $code"; failures=$((failures + 1)); }
done
echo "ok: RestartPreventExitStatus=$prevent"
exit $((failures > 0))
