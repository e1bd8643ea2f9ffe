#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The daemon at its open file limit (issue 33): does it keep answering, and does it give its
# descriptors back once the traced processes exit? Run as root from the repo root after
# scripts/build.sh:
#   tests/bench/fd_limit.sh [BUILD_DIR] [PROCESSES] [LIMIT]     (defaults: build, 200, 400)
# Starts the daemon (adaptive launch counting: ~4 links per process; SCAN=2s, the default
# interval), lowers its soft RLIMIT_NOFILE to LIMIT with prlimit, starts PROCESSES stand-in
# processes that wait, then lets them all exit together. Prints the daemon's descriptors and
# bpf_link descriptors, its completed scans and whether /healthz answered within 2 s, every
# second while they run (RUN_S, 20) and after they exit (AFTER_S, 30); then the time SIGTERM
# took (TERM_AT=running: sent while the processes still run, at the limit, and they exit after).
# Other stand-ins on the host are traced too: the process count says whose they are.
set -euo pipefail
BUILD=${1:-build}
PROCESSES=${2:-200}
LIMIT=${3:-400}
PORT=${PORT:-19622}
SCAN=${SCAN:-2s}
RUN_S=${RUN_S:-20}
AFTER_S=${AFTER_S:-30}
TERM_AT=${TERM_AT:-exited}
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
work=$(mktemp -d)
echo "cuda: {launch_counting: adaptive}" >"$work/config.yaml"
"$BUILD/neutracerd" --config "$work/config.yaml" --listen "127.0.0.1:$PORT" \
  --scan-interval "$SCAN" --log-level info 2>"$work/daemon.log" &
daemon=$!
cleanup() {
  touch "$work/exit"
  kill -TERM "$daemon" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
healthz() { curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/healthz" || true; }
for _ in $(seq 100); do [ "$(healthz)" = 200 ] && break; sleep 0.2; done
fds() { find "/proc/$daemon/fd" -mindepth 1 2>/dev/null | wc -l; }
links() { find "/proc/$daemon/fd" -lname 'anon_inode:bpf_link' 2>/dev/null | wc -l; }
scans() {
  curl -s -m 2 "http://127.0.0.1:$PORT/metrics" | awk '$1 == "neutracer_scans_total" {print $2}'
}
sleep 5
echo "idle: fds=$(fds) bpf_link=$(links)"
prlimit --pid "$daemon" --nofile="$LIMIT:" # the soft limit only
answered=0 asked=0
sample() {
  local code
  code=$(healthz)
  asked=$((asked + 1))
  [ "$code" = 200 ] && answered=$((answered + 1))
  echo "$1 fds=$(fds) bpf_link=$(links) scans=$(scans) healthz=${code:-none}" \
    "processes=$(pgrep -c -f "wait:$work/exit" || true)"
}
for _ in $(seq "$PROCESSES"); do
  "$BUILD/tests/standin/neutracer-scenario" alloc:4096:1 launch:k:1 "wait:$work/exit" \
    >/dev/null &
done
for t in $(seq "$RUN_S"); do
  sample "running t=${t}s"
  sleep 1
done
stop() {
  local start
  start=$(date +%s.%N)
  kill -TERM "$daemon"
  wait "$daemon" || true
  echo "SIGTERM took $(echo "$(date +%s.%N) - $start" | bc) s"
}
if [ "$TERM_AT" = running ]; then
  echo "healthz answered $answered of $asked"
  stop
  exit 0
fi
touch "$work/exit"
while pgrep -f "wait:$work/exit" >/dev/null; do sleep 0.1; done
for t in $(seq 0 "$AFTER_S"); do
  sample "exited t=${t}s"
  sleep 1
done
echo "healthz answered $answered of $asked"
echo "fd_limit scans: $(curl -s -m 2 "http://127.0.0.1:$PORT/metrics" |
  awk '/^neutracer_scan_errors_total\{reason="fd_limit"\}/ {print $2}')"
echo "fd limit log lines: $(grep -c "out of file descriptors" "$work/daemon.log" || true)"
stop
