#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Process churn (issue 8 part 4): does the daemon give back everything a short-lived CUDA
# process made it hold? Run as root from the repo root after a build:
#   tests/bench/churn.sh [BUILD_DIR] [PROCS] [PARALLEL]
# (defaults build, 10000, 12; env: DAEMON=BUILD_DIR/neutracerd,
#  SCENARIO=BUILD_DIR/tests/standin/neutracer-scenario, SCAN=200ms, PORT=a free one,
#  SETTLE_S=15, RSS_TOL_KIB=4096, WARM_TOL_KIB=512, SEED=1, KEEP=1 keeps the work directory,
#  TIMELINE_OUT=FILE copies timeline.csv there)
#
# 1. Starts the daemon (`--config /dev/null`, SCAN interval, its own port, log in a temporary
#    directory) with no CUDA process of ours running, scrapes /metrics once a second for
#    SETTLE_S seconds (as Prometheus would, so the HTTP threads' heaps are warm) and records
#    the baseline: VmRSS, open fds, threads, the entries of each of the daemon's BPF hash maps
#    (tests/bench/map_count.c: launches, inflight, thread_contexts, traced_tgids, os_*),
#    the per-process series on /metrics (samples with a pid label) and attached libraries.
# 2. Runs PROCS short-lived neutracer-scenario processes, PARALLEL at a time
#    (tests/bench/churn_load.py: small variations of `alloc:4096:2 launch:k:3 free:1`, some
#    sleeping up to 300 ms so that scans discover them, some never seen by a scan), scraping
#    once a second and sampling every 2 s into timeline.csv.
# 3. After the last one exited: waits until no series of a churn PID is left and the probes
#    are detached again (as at the baseline), then SETTLE_S more seconds of scrapes, and
#    records the same figures.
# Checks: no series with the pid of a churn process; the entries of every map keyed by
# process or thread owned by exited processes are 0 (thread_contexts excepted: an LRU map
# whose entries of exited threads age out only when it needs room; its count is reported and
# bounded by its max_entries); every other map's entries back at the baseline (unless the
# daemon traces other processes at the end: processes of other users of this machine); VmRSS
# within RSS_TOL_KIB of the baseline; /healthz 200; every churn process exited 0.
# neutracer_events_dropped_total and neutracer_bpf_map_update_errors_total are reported.
# RSS_TOL_KIB (4 MiB), baseline -> after: the baseline has no probe attached; RSS rises by
# about 3.4 MiB early in the churn and stays (the first attach: the driver file's symbols and
# probe state; heaps growing to the working set; glibc keeps freed memory in its arenas: the
# main loop's and each HTTP worker's), and other processes' driver files attached meanwhile
# add to it; a leak of 420 B per process
# (4 MiB / 10 000) alone would exceed it. WARM_TOL_KIB (512 KiB): growth during the second
# half of the churn, from the first sample after PROCS/2 processes exited to the last sample
# (in the first half RSS still climbs by about 1 MiB to the working set of PARALLEL
# processes tracked at once, then stays flat): about 105 B per process over 5 000.
set -euo pipefail
BUILD=${1:-build}
PROCS=${2:-10000}
PARALLEL=${3:-12}
DAEMON=${DAEMON:-$BUILD/neutracerd}
SCENARIO=${SCENARIO:-$BUILD/tests/standin/neutracer-scenario}
SCAN=${SCAN:-200ms}
SETTLE_S=${SETTLE_S:-15}
RSS_TOL_KIB=${RSS_TOL_KIB:-4096}
WARM_TOL_KIB=${WARM_TOL_KIB:-512}
SEED=${SEED:-1}
HERE=$(cd "$(dirname "$0")" && pwd)

[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
[ -x "$DAEMON" ] && [ -x "$SCENARIO" ] || { echo "no $DAEMON or $SCENARIO: build first" >&2; exit 1; }
DAEMON=$(realpath "$DAEMON"); SCENARIO=$(realpath "$SCENARIO")
PORT=${PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
URL="http://127.0.0.1:$PORT"

work=$(mktemp -d /tmp/neutracer-churn.XXXXXX)
daemon_pid=""
load_pid=""
cleanup() {
  [ -z "$load_pid" ] || { kill -TERM "$load_pid" 2>/dev/null || true; wait "$load_pid" 2>/dev/null || true; }
  if [ -n "$daemon_pid" ]; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  if [ "${KEEP:-0}" = 1 ] || [ "${failed:-1}" != 0 ]; then echo "work directory kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cc -O2 -Wall -o "$work/map_count" "$HERE/map_count.c" -lbpf
: > "$work/exited.pids"

# --- helpers ----------------------------------------------------------------------------------
. "$HERE/churn_lib.sh"
sum_metric() { awk -v m="$1" 'index($0, m) == 1 && (substr($0, length(m) + 1, 1) ~ /[ {]/) {s += $NF} END {printf "%d\n", s}' "$2"; }
# Per-process series in a scrape: "SAMPLES PIDS" (samples with a pid label, distinct pids).
pid_series() {
  { grep -o 'pid="[0-9]*"' "$1" || true; } | sort | uniq -c | awk '{s += $1; n++} END {printf "%d %d\n", s, n}'
}
no_churn_series() { scrape > "$work/check.txt" && [ "$(churn_series "$work/check.txt")" = 0 ]; }
libs_at() { scrape > "$work/check.txt" && [ "$(value neutracer_attached_libraries "$work/check.txt")" = "$1" ]; }
settle() { local i; for i in $(seq "$SETTLE_S"); do scrape > /dev/null; sleep 1; done; }
# Records the figures under PREFIX: PREFIX.metrics, PREFIX.maps, and shell variables.
record() { # PREFIX
  scrape > "$work/$1.metrics"
  "$work/map_count" "$daemon_pid" "$work/exited.pids" > "$work/$1.maps"
  printf '%s %s %s %s %s\n' "$(status_kib "$daemon_pid" VmRSS)" "$(status_kib "$daemon_pid" VmHWM)" \
    "$(fds "$daemon_pid")" "$(status_kib "$daemon_pid" Threads)" "$(pid_series "$work/$1.metrics")" > "$work/$1.proc"
}

# --- 1. daemon and baseline ---------------------------------------------------------------------
"$DAEMON" --config /dev/null --listen "127.0.0.1:$PORT" --scan-interval "$SCAN" --log-level info \
  > "$work/daemon.log" 2>&1 &
daemon_pid=$!
wait_until 60 daemon_up
settle
libs0=$(scrape | awk '$1 == "neutracer_attached_libraries" {print $2}')
record base
read -r rss0 hwm0 fds0 thr0 ser0 spid0 < "$work/base.proc"
echo "baseline after ${SETTLE_S}s: RSS $rss0 KiB, $fds0 fds, $thr0 threads, $ser0 per-process samples ($spid0 processes), $libs0 libraries attached"

# --- 2. churn ---------------------------------------------------------------------------------
t0=$SECONDS; ticks0=$(cpu_ticks "$daemon_pid")
python3 "$HERE/churn_load.py" "$SCENARIO" --count "$PROCS" --parallel "$PARALLEL" --seed "$SEED" \
  --exited "$work/exited.pids" --progress 1000 > "$work/load.out" 2>&1 &
load_pid=$!
echo "t_s,rss_kib,fds,threads,cuda_processes,launches,launches_dead,inflight,thread_contexts,exited" > "$work/timeline.csv"
scrape_fail=0; peak_procs=0; n=0
while kill -0 "$load_pid" 2>/dev/null; do
  kill -0 "$daemon_pid" 2>/dev/null || { echo "daemon died during churn" >&2; tail -20 "$work/daemon.log" >&2; exit 1; }
  if scrape > "$work/during.txt"; then
    p=$(value neutracer_cuda_processes "$work/during.txt"); [ "${p:-0}" -le "$peak_procs" ] || peak_procs=$p
  else
    scrape_fail=$((scrape_fail + 1))
  fi
  if [ $((n % 2)) = 0 ]; then
    "$work/map_count" "$daemon_pid" "$work/exited.pids" > "$work/during.maps" || true
    m() { awk -v n="$1" -v f="$2" '$1 == n {print $f}' "$work/during.maps"; }
    echo "$((SECONDS - t0)),$(status_kib "$daemon_pid" VmRSS),$(fds "$daemon_pid"),$(status_kib "$daemon_pid" Threads),${p:-},$(m launches 4),$(m launches 5),$(m inflight 4),$(m thread_contexts 4),$(wc -l < "$work/exited.pids")" >> "$work/timeline.csv"
  fi
  n=$((n + 1)); sleep 1
done
load_rc=0; wait "$load_pid" || load_rc=$?; load_pid=""
churn_s=$((SECONDS - t0)); churn_cpu=$(( $(cpu_ticks "$daemon_pid") - ticks0 ))
grep -v '^  ' "$work/load.out" || true

# --- 3. after ---------------------------------------------------------------------------------
t1=$SECONDS
wait_until 60 no_churn_series || true
series_gone_s=$((SECONDS - t1))
wait_until 120 libs_at "$libs0" || true # probes removed off the main loop: ~15 s
detach_s=$((SECONDS - t1))
threads_back() { [ "$(status_kib "$daemon_pid" Threads)" -le $((thr0 + 2)) ]; }
wait_until 180 threads_back || true # one thread per probe link while they are removed
threads_s=$((SECONDS - t1))
sleep 2 # a few more scans
settle
record after
read -r rss1 hwm1 fds1 thr1 ser1 spid1 < "$work/after.proc"
hc=$(healthz_code)
left=$(churn_series "$work/after.metrics")
foreign=$(value neutracer_cuda_processes "$work/after.metrics")
drops=$(awk '/^neutracer_events_dropped_total/ {printf "%s=%s ", $1, $2}' "$work/after.metrics")
upd_err=$(sum_metric neutracer_bpf_map_update_errors_total "$work/after.metrics")
attach_err=$(sum_metric neutracer_probe_attach_errors_total "$work/after.metrics")
scans=$(value neutracer_scans_total "$work/after.metrics")
held=$(value neutracer_cuda_exits_holding_memory_total "$work/after.metrics")

failed=0
fail() { echo "FAIL: $*"; failed=1; }
echo
echo "== churn: $PROCS processes, $PARALLEL at a time, in ${churn_s}s; scan $SCAN; $(nproc) CPUs; load1 $(cut -d' ' -f1 /proc/loadavg); $(date -u +%FT%TZ)"
echo "daemon: $("$DAEMON" --version 2>&1 | head -1); pid $daemon_pid; port $PORT; CPU during churn $(awk -v t="$churn_cpu" -v hz="$(getconf CLK_TCK)" -v s="$churn_s" 'BEGIN {printf "%.1f", 100 * t / hz / s}') % of one core; $scans scans"
echo "peak CUDA processes tracked at a scrape: $peak_procs; exits holding memory counted: ${held:-0}; failed scrapes during churn: $scrape_fail"
printf '%-34s %12s %12s\n' "" baseline after
printf '%-34s %12s %12s\n' "VmRSS KiB" "$rss0" "$rss1" "VmHWM KiB" "$hwm0" "$hwm1" "open fds" "$fds0" "$fds1" \
  "threads" "$thr0" "$thr1" "per-process samples on /metrics" "$ser0" "$ser1" "processes with series" "$spid0" "$spid1"
printf '%-34s %12s %12s\n' "map entries (max_entries), dead" "" ""
join -a1 -a2 -e 0 -o 0,1.3,1.4,2.4,2.5 <(awk '{print $1, $2, $3, $4, $5}' "$work/base.maps" | sort) \
  <(awk '{print $1, $2, $3, $4, $5}' "$work/after.maps" | sort) > "$work/maps.joined"
while read -r name max e0 e1 d1; do
  printf '  %-32s %12s %12s   dead after: %s\n' "$name ($max)" "$e0" "$e1" "$d1"
  if [ "$name" = thread_contexts ]; then
    [ "$e1" -le "$max" ] || fail "thread_contexts holds $e1 > max_entries $max"
    continue
  fi
  [ "$d1" = - ] || [ "$d1" = 0 ] || fail "$name: $d1 entries of exited processes left"
  if [ "$e1" -gt "$e0" ]; then
    if [ "${foreign:-0}" = 0 ]; then fail "$name: $e1 entries, baseline $e0"
    else echo "    ($name above baseline with ${foreign} other CUDA processes traced: not checked)"; fi
  fi
done < "$work/maps.joined"
echo "thread_contexts is an LRU map: entries of exited threads stay until it needs room, so it never holds more than its max_entries"
echo "series of churn PIDs left: $left (all gone ${series_gone_s}s after the last exit; attached libraries back to baseline after ${detach_s}s, daemon threads after ${threads_s}s)"
echo "events dropped: ${drops:-none}; BPF map update errors: $upd_err; probe attach errors: $attach_err"
[ "$attach_err" = 0 ] || echo "  (attach errors: a driver file is attached through /proc/PID/root of the process that maps it; if that process exits mid-attach the remaining probes fail: see the daemon log)"
echo "/healthz: $hc"
[ "$left" = 0 ] || fail "$left churn processes still have series"
[ "$hc" = 200 ] || fail "/healthz answered $hc"
[ "$load_rc" = 0 ] || fail "churn processes failed (see $work/load.out)"
[ "$scrape_fail" = 0 ] || fail "$scrape_fail scrapes failed during churn"
growth=$((rss1 - rss0))
echo "RSS growth, baseline -> after: $growth KiB (tolerance $RSS_TOL_KIB KiB)"
[ "$growth" -le "$RSS_TOL_KIB" ] || fail "RSS grew by $growth KiB"
# During the churn: from the first sample after PROCS/2 exits (probes attached, heaps warm)
# to the last sample.
read -r warm_t warm_x warm_rss last_t last_x last_rss < <(awk -F, -v p="$PROCS" 'NR > 1 {
    if (!w && $10 >= p / 2) {w = 1; wt = $1; wx = $10; wr = $2} lt = $1; lx = $10; lr = $2}
  END {print wt + 0, wx + 0, wr + 0, lt + 0, lx + 0, lr + 0}' "$work/timeline.csv")
if [ "$last_x" -gt "$warm_x" ]; then
  warm_growth=$((last_rss - warm_rss))
  echo "RSS during the churn: $warm_rss KiB at ${warm_t}s ($warm_x exited) -> $last_rss KiB at ${last_t}s ($last_x exited):" \
    "$warm_growth KiB, $(awk -v g="$warm_growth" -v n="$((last_x - warm_x))" 'BEGIN {printf "%.1f", g * 1024 / n}') B per process (tolerance $WARM_TOL_KIB KiB)"
  [ "$warm_growth" -le "$WARM_TOL_KIB" ] || fail "RSS grew by $warm_growth KiB during the churn"
fi
other=$({ grep -o 'pid="[0-9]*",comm="[^"]*"' "$work/after.metrics" || true; } | sort -u | tr '\n' ' ')
[ -z "$other" ] || echo "other processes traced at the end (not ours): $other"
cp "$work/timeline.csv" "${TIMELINE_OUT:-/dev/null}" 2>/dev/null || true
if [ "$failed" = 0 ]; then echo "PASS"; else echo "churn check FAILED"; fi
exit "$failed"
