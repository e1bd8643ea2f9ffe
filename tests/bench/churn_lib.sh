# SPDX-License-Identifier: Apache-2.0
# Helpers shared by churn.sh and soak.sh; sourced after they set URL, work and daemon_pid.
# shellcheck shell=bash
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
fds() { find "/proc/$1/fd" -mindepth 1 -maxdepth 1 | wc -l; }
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
scrape() { curl -sf --max-time 10 "$URL/metrics"; }
value() { awk -v n="$1" '$1 == n {print $2; exit}' "$2"; }
healthz_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$URL/healthz" || true; }
daemon_up() {
  kill -0 "$daemon_pid" 2>/dev/null || { echo "daemon exited:" >&2; tail -20 "$work/daemon.log" >&2; exit 1; }
  [ "$(healthz_code)" = 200 ]
}
wait_until() { # TIMEOUT_S COMMAND...
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "timed out waiting for: $*" >&2; return 1; }
    sleep 0.5
  done
}
# Samples whose pid is one of the exited churn processes.
churn_series() {
  { grep -o 'pid="[0-9]*"' "$1" || true; } | tr -dc '0-9\n' | sort -u | comm -12 - <(sort -u "$work/exited.pids") | wc -l
}
