#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Soak under steady process churn (issue 8 part 4). Run as root from the repo root:
#   tests/bench/soak.sh [DURATION] [BUILD_DIR]
# (DURATION: 30m by default; s, m or h, or bare seconds. BUILD_DIR: build. env: DAEMON,
#  SCENARIO (as in churn.sh), RATE=6 short-lived process starts per second, LONG=3
#  long-lived processes, SAMPLE_S=30, SCRAPE_S=15, SCAN=200ms, PORT=a free one,
#  SLOPE_MAX_KIB_MIN=64, SCRAPES=100, WARM_SCRAPES=300 (before the load: every HTTP worker
#  serves once), CSV=WORKDIR/soak.csv, SEED=1)
#
# Starts the daemon as churn.sh does, then for DURATION: RATE short-lived neutracer-scenario
# processes a second (tests/bench/churn_load.py) and LONG long-lived ones that allocate,
# launch, copy and free in 0.3-0.7 s cycles (bounded memory); /metrics is scraped every
# SCRAPE_S seconds, as Prometheus would. Every SAMPLE_S seconds one CSV row: the daemon's
# VmRSS, fds, threads, CPU, the CUDA processes it tracks, per-process samples on /metrics, the
# scrape's time, and the entries (and entries of exited owners) of its BPF hash maps
# (tests/bench/map_count.c). At the end: SCRAPES sequential GETs of /metrics while the load
# still runs (p50, p99, max), then the load stops and the series of every exited process
# must be gone. The CSV can be summarised again with tests/bench/soak_fit.py CSV.
# Fit (soak_fit.py): least squares line through VmRSS over the second half of the samples (the first half
# holds warm-up: heaps, the long-lived processes' allocation histories filling up to their
# 4096-entry cap). Fails when the slope exceeds SLOPE_MAX_KIB_MIN: 64 KiB/min is a leak of
# about 180 B per short-lived process at 6 starts/s (90 MiB a day), while a one-off 512 KiB
# step of glibc's arenas in the middle of a 15-minute window fits as about 50 KiB/min and
# passes. Also fails when the minimum of open fds or threads over the second
# half exceeds the first half's (its first 2 samples left out) by more than 16 fds / 4
# threads (minimums, because attaching and removing probes, of other processes' driver
# files too, adds one fd per probe and one thread per probe being removed for a while), when
# the daemon dies, /healthz is not 200, or series of exited processes remain.
set -euo pipefail
DURATION=${1:-30m}
BUILD=${2:-build}
DAEMON=${DAEMON:-$BUILD/neutracerd}
SCENARIO=${SCENARIO:-$BUILD/tests/standin/neutracer-scenario}
RATE=${RATE:-6}
LONG=${LONG:-3}
SAMPLE_S=${SAMPLE_S:-30}
SCRAPE_S=${SCRAPE_S:-15}
SCAN=${SCAN:-200ms}
SLOPE_MAX_KIB_MIN=${SLOPE_MAX_KIB_MIN:-64}
SCRAPES=${SCRAPES:-100}
WARM_SCRAPES=${WARM_SCRAPES:-300}
SEED=${SEED:-1}
HERE=$(cd "$(dirname "$0")" && pwd)

case "$DURATION" in
  *h) dur_s=$(( ${DURATION%h} * 3600 )) ;;
  *m) dur_s=$(( ${DURATION%m} * 60 )) ;;
  *s) dur_s=${DURATION%s} ;;
  *) dur_s=$DURATION ;;
esac
[ "$dur_s" -ge $((4 * SAMPLE_S)) ] || { echo "DURATION must be at least 4 samples ($((4 * SAMPLE_S))s)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
[ -x "$DAEMON" ] && [ -x "$SCENARIO" ] || { echo "no $DAEMON or $SCENARIO: build first" >&2; exit 1; }
DAEMON=$(realpath "$DAEMON"); SCENARIO=$(realpath "$SCENARIO")
PORT=${PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
URL="http://127.0.0.1:$PORT"

work=$(mktemp -d /tmp/neutracer-soak.XXXXXX)
CSV=${CSV:-$work/soak.csv}
daemon_pid=""
load_pid=""
scraper_pid=""
cleanup() {
  [ -z "$scraper_pid" ] || { kill -TERM "$scraper_pid" 2>/dev/null || true; wait "$scraper_pid" 2>/dev/null || true; }
  [ -z "$load_pid" ] || { kill -TERM "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true; }
  if [ -n "$daemon_pid" ]; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  echo "work directory (daemon log, CSV, scrapes): $work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cc -O2 -Wall -o "$work/map_count" "$HERE/map_count.c" -lbpf
: > "$work/exited.pids"

. "$HERE/churn_lib.sh"
no_churn_series() { scrape > "$work/check.txt" && [ "$(churn_series "$work/check.txt")" = 0 ]; }

# --- daemon, load ---------------------------------------------------------------------------------
"$DAEMON" --config /dev/null --listen "127.0.0.1:$PORT" --scan-interval "$SCAN" --log-level info \
  > "$work/daemon.log" 2>&1 &
daemon_pid=$!
wait_until 60 daemon_up
# Every HTTP worker (web.max_connections, 256 by default) serves once before the measurement:
# civetweb hands each connection to the worker that waited longest, so the first 256 scrapes
# each reach a fresh worker, whose first request costs it about 20 KiB for good (5 MiB in
# all, BENCHMARKS.md "Memory under process churn"). Spread over the run, that one-off growth
# would read as a leak: at this script's 6 scrapes a minute it takes 43 minutes.
for _ in $(seq "$WARM_SCRAPES"); do scrape > /dev/null; done
for _ in 1 2 3 4 5; do scrape > /dev/null; sleep 1; done
rss_start=$(status_kib "$daemon_pid" VmRSS)

# The load runs 120 s beyond DURATION and is stopped after the final scrapes.
python3 "$HERE/churn_load.py" "$SCENARIO" --rate "$RATE" --duration $((dur_s + 120)) --long "$LONG" \
  --seed "$SEED" --exited "$work/exited.pids" > "$work/load.out" 2>&1 &
load_pid=$!
( while :; do curl -sf --max-time 10 -o /dev/null "$URL/metrics" || echo "scrape failed $(date -u +%T)"; sleep "$SCRAPE_S"; done ) \
  > "$work/scraper.out" 2>&1 &
scraper_pid=$!

maps="launches inflight thread_contexts traced_tgids os_counters os_threads os_io_inflight os_sockets"
{
  printf 't_s,rss_kib,hwm_kib,fds,threads,cpu_s,cuda_processes,pid_samples,scrape_ms,exited'
  for m in $maps; do printf ',%s,%s_dead' "$m" "$m"; done
  echo
} > "$CSV"
hz=$(getconf CLK_TCK)
t0=$(date +%s.%N)
echo "soak: $DURATION ($dur_s s), $RATE starts/s + $LONG long-lived, sample every ${SAMPLE_S}s, daemon pid $daemon_pid port $PORT, CSV $CSV"
i=0
while :; do
  target=$(awk -v a="$t0" -v i="$i" -v s="$SAMPLE_S" 'BEGIN {printf "%.3f", a + i * s}')
  now=$(date +%s.%N)
  sleep "$(awk -v a="$target" -v b="$now" 'BEGIN {d = a - b; if (d < 0) d = 0; printf "%.3f", d}')"
  kill -0 "$daemon_pid" 2>/dev/null || { echo "FAIL: daemon died" >&2; tail -20 "$work/daemon.log" >&2; exit 1; }
  kill -0 "$load_pid" 2>/dev/null || { echo "FAIL: load generator ended early" >&2; cat "$work/load.out" >&2; exit 1; }
  t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  ms=$(curl -sf --max-time 10 -o "$work/sample.metrics" -w '%{time_total}' "$URL/metrics" | awk '{printf "%.1f", $1 * 1000}') || ms=""
  "$work/map_count" "$daemon_pid" "$work/exited.pids" > "$work/sample.maps" || true
  {
    printf '%s,%s,%s,%s,%s,%s,%s,%s,%s,%s' "$t" "$(status_kib "$daemon_pid" VmRSS)" "$(status_kib "$daemon_pid" VmHWM)" \
      "$(fds "$daemon_pid")" "$(status_kib "$daemon_pid" Threads)" \
      "$(awk -v t="$(cpu_ticks "$daemon_pid")" -v hz="$hz" 'BEGIN {printf "%.2f", t / hz}')" \
      "$(value neutracer_cuda_processes "$work/sample.metrics")" "$(grep -c 'pid="' "$work/sample.metrics" || true)" \
      "$ms" "$(wc -l < "$work/exited.pids")"
    for m in $maps; do
      awk -v n="$m" '$1 == n {e = $4; d = $5} END {printf ",%s,%s", e, d}' "$work/sample.maps"
    done
    echo
  } >> "$CSV"
  [ $((i % 10)) != 0 ] || echo "  $(tail -1 "$CSV" | cut -d, -f1-10)"
  i=$((i + 1))
  [ "$(awk -v t="$t" -v d="$dur_s" 'BEGIN {print (t + 0.5 >= d) ? 1 : 0}')" = 0 ] || break
done

# --- scrape latency under load, then stop ----------------------------------------------------------
for _ in $(seq "$SCRAPES"); do
  curl -sf --max-time 10 -o /dev/null -w '%{time_total} %{size_download}\n' "$URL/metrics"
done > "$work/scrapes.txt"
read -r p50 p99 pmax bytes < <(sort -n "$work/scrapes.txt" | awk '{t[NR] = $1 * 1000; sz = $2}
  function at(q,  i) {i = int(q * NR + 0.999999); return t[i < 1 ? 1 : i]}
  END {printf "%.1f %.1f %.1f %d\n", at(0.5), at(0.99), t[NR], sz}')
kill -TERM "$scraper_pid"; wait "$scraper_pid" 2>/dev/null || true; scraper_pid=""
kill -TERM "$load_pid"; load_rc=0; wait "$load_pid" || load_rc=$?; load_pid=""
wait_until 60 no_churn_series || true
scrape > "$work/end.metrics"
left=$(churn_series "$work/end.metrics")
hc=$(healthz_code)
drops=$(awk '/^neutracer_events_dropped_total/ {printf "%s=%s ", $1, $2}' "$work/end.metrics")
upd_err=$(awk '/^neutracer_bpf_map_update_errors_total/ {s += $2} END {printf "%d", s}' "$work/end.metrics")
"$work/map_count" "$daemon_pid" "$work/exited.pids" > "$work/end.maps"
scrape_failures=$(grep -c 'scrape failed' "$work/scraper.out" || true)

failed=0
fail() { echo "FAIL: $*"; failed=1; }
echo
echo "== soak: $DURATION, $(($(wc -l < "$CSV") - 1)) samples every ${SAMPLE_S}s; $(nproc) CPUs; load1 $(cut -d' ' -f1 /proc/loadavg); $(date -u +%FT%TZ)"
echo "daemon: $("$DAEMON" --version 2>&1 | head -1); scan $SCAN; RSS before the load $rss_start KiB"
echo "load: $(tail -1 "$work/load.out")"
python3 "$HERE/soak_fit.py" "$CSV" "$SLOPE_MAX_KIB_MIN" > "$work/fit.txt"
cat "$work/fit.txt"
grep -q '^FAIL' "$work/fit.txt" && failed=1
echo "scrape latency at the end ($SCRAPES sequential GETs under load): p50 $p50 ms, p99 $p99 ms, max $pmax ms ($bytes B)"
echo "maps at the end (name type max entries dead):"; sed 's/^/  /' "$work/end.maps"
echo "events dropped: ${drops:-none}; BPF map update errors: $upd_err; failed periodic scrapes: $scrape_failures"
echo "series of exited processes left: $left; /healthz: $hc"
[ "$left" = 0 ] || fail "$left exited processes still have series"
[ "$hc" = 200 ] || fail "/healthz answered $hc"
[ "$load_rc" = 0 ] || fail "load processes failed (see $work/load.out)"
[ "$scrape_failures" = 0 ] || fail "$scrape_failures periodic scrapes failed"
if [ "$failed" = 0 ]; then echo "PASS"; else echo "soak FAILED"; fi
exit "$failed"
