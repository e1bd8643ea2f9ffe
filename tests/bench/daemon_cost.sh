#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The daemon's own cost (issue 7), on the stand-in driver (no GPU needed). Run as root from the
# repo root after scripts/build.sh:
#   tests/bench/daemon_cost.sh [WINDOW_S] [TRACKED_PROCS] [SCRAPES]
# (defaults 20, 1000, 200; env: PROCS=8 KERNELS=50 LAUNCH_RATE=100000 ALLOC_RATE=10000
#  ALLOC_BYTES=4096 START_BATCH=20 PORT=19603 BUILD=build; RING_BUFFER_BYTES sets
#  cuda.ring_buffer_bytes, the daemon's default 4 MiB when unset; EXTRA_YAML is appended to the
#  daemon's config, e.g. EXTRA_YAML='stacks: {enabled: false}')
#
# Phase 1: PROCS processes of tests/bench/daemon_cost_load.c, each with KERNELS kernel names,
#   (a) launch at LAUNCH_RATE/s in all, round-robin over their kernels, (b) make ALLOC_RATE/s
#   cuMemAlloc_v2 + cuMemFree_v2 pairs in all, (c) stay alive and idle. For each, the daemon's
#   CPU (utime+stime from /proc/PID/stat over WINDOW_S, % of one core), VmRSS at the end and
#   VmHWM, the load processes' own CPU (their calls plus the uprobes they trap into), and the
#   daemon's counts against the calls made (read while the processes are alive).
# Phase 2: TRACKED_PROCS neutracer-scenario processes, each launching KERNELS distinct kernels
#   once, then sleeping (`sleep:`, not `wait:PATH`: 1000 processes polling a file every 10 ms
#   would wake 100 000 times a second and load the 2 CPUs the daemon is measured on); they are
#   stopped by SIGTERM to their PIDs. Once the daemon counts them all: its CPU and RSS over
#   WINDOW_S with no scrapes, then SCRAPES sequential GETs of /metrics (curl time_total): p50,
#   p99, max, size; first with Accept-Encoding: gzip as Prometheus sends it (bytes on the wire),
#   then without.
# The daemon runs with its defaults (2 s scans) but counts every launch (`launch_counting: exact`). Targets (issue 7): daemon
# <= 2 % of one core at 100 k launches/s, RSS <= 64 MiB, scrape p99 <= 50 ms at 1000 processes.
# Every process it starts is stopped on exit (the daemon by SIGTERM: removing probes takes ~15 s).
set -euo pipefail
WINDOW=${1:-20}
TRACKED=${2:-1000}
SCRAPES=${3:-200}
PROCS=${PROCS:-8}
KERNELS=${KERNELS:-50}
LAUNCH_RATE=${LAUNCH_RATE:-100000}
ALLOC_RATE=${ALLOC_RATE:-10000}
ALLOC_BYTES=${ALLOC_BYTES:-4096}
START_BATCH=${START_BATCH:-20}
PORT=${PORT:-19603}
BUILD=${BUILD:-build}
STANDIN_DIR=$(cd "$BUILD/tests/standin" && pwd)
SCENARIO=$STANDIN_DIR/neutracer-scenario
URL="http://127.0.0.1:$PORT"
HZ=$(getconf CLK_TCK)
WARMUP=3 # seconds of load before a window starts
PHASE_SECONDS=$((WARMUP + WINDOW + 2))

[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
if [ ! -x "$BUILD/neutracerd" ] || [ ! -x "$SCENARIO" ]; then echo "build first: scripts/build.sh" >&2; exit 1; fi
if curl -s --max-time 1 "$URL/healthz" >/dev/null 2>&1; then
  echo "port $PORT is in use (set PORT=...)" >&2; exit 1
fi
# One process per tracked workload (no fds are held open for them).
[ "$(ulimit -u)" = unlimited ] || [ "$(ulimit -u)" -ge $((TRACKED + PROCS + 100)) ] ||
  { echo "ulimit -u $(ulimit -u) is below $((TRACKED + PROCS + 100))" >&2; exit 1; }
[ "$(cat /proc/sys/kernel/pid_max)" -gt $((TRACKED + PROCS + 1000)) ] || { echo "pid_max too low" >&2; exit 1; }

work=$(mktemp -d)
# Every launch counted (the per-launch price of a probe): exact mode, not the adaptive default.
echo "cuda: {launch_counting: exact${RING_BUFFER_BYTES:+, ring_buffer_bytes: $RING_BUFFER_BYTES}}" \
  > "$work/exact.yaml"
[ -z "${EXTRA_YAML:-}" ] || echo "$EXTRA_YAML" >> "$work/exact.yaml"
daemon_pid=""
load_pids=()
tracked_pids=()
cleanup() {
  touch "$work/ctl/launch" "$work/ctl/alloc" "$work/ctl/stop" 2>/dev/null || true
  local pid
  [ "${#tracked_pids[@]}" = 0 ] || kill -TERM "${tracked_pids[@]}" 2>/dev/null || true
  for pid in "${load_pids[@]}" "${tracked_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$daemon_pid" ]; then
    kill -TERM "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$work/ctl" "$work/load" "$work/tracked"

cc -O2 -Wall -I tests/standin -o "$work/daemon_cost_load" tests/bench/daemon_cost_load.c \
  "$STANDIN_DIR/libcuda.so.1" -Wl,-rpath,"$STANDIN_DIR"

# --- helpers ------------------------------------------------------------------------------
scrape() { curl -sf --max-time 30 "$URL/metrics"; }
# gauge/counter without labels from a scrape file
value() { awk -v n="$1" '$1 == n {print $2; exit}' "$2"; }
cpu_ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; } # utime + stime
sum_ticks() { local t=0 p; for p in "$@"; do t=$((t + $(cpu_ticks "$p"))); done; echo "$t"; }
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
pct() { awk -v t="$1" -v hz="$HZ" -v s="$2" 'BEGIN {printf "%.2f", 100 * t / hz / s}'; }
load1() { cut -d' ' -f1 /proc/loadavg; }
busy_jiffies() { awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; } # all CPUs
busy_pct() { # JIFFIES0 SECONDS: machine CPU use since then, % of all CPUs
  awk -v j="$(($(busy_jiffies) - $1))" -v hz="$HZ" -v s="$2" -v n="$(nproc)" \
    'BEGIN {printf "%.0f", 100 * j / hz / s / n}'
}
# Sum of METRIC's series whose pid is in PIDFILE and whose labels match REGEX, from FILE.
sum_for_pids() { # PIDFILE METRIC REGEX FILE
  awk -v m="$2" -v re="$3" 'NR == FNR {want["pid=\"" $1 "\""] = 1; next}
    index($0, m "{") == 1 && $0 ~ re {
      match($0, /pid="[0-9]+"/); if (substr($0, RSTART, RLENGTH) in want) s += $NF }
    END {printf "%d\n", s}' "$1" "$4"
}
wait_until() { # TIMEOUT_S COMMAND...: polls every 0.5 s
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || { echo "timed out waiting for: $*" >&2; return 1; }
    sleep 0.5
  done
}
lines_in() { cat "$1"/*.out 2>/dev/null | grep -c "^$2 " || true; }
lines_are() { [ "$(lines_in "$1" "$2")" = "$3" ]; } # DIR WORD N: N outputs have printed WORD
# Prints "PROCESSES LAUNCHES": how many of the PIDs in PIDFILE the daemon tracks, and their
# launches. Reads /api/v1/processes (a string built at each scan, cheap to serve), not
# /metrics: a 10 MB scrape would grow the HTTP threads' heaps before the idle figures.
seen() { # PIDFILE
  curl -sf --max-time 30 "$URL/api/v1/processes" | python3 -c '
import json, sys
want = set(int(p) for p in open(sys.argv[1]))
procs = [p for p in json.load(sys.stdin)["processes"] if p["pid"] in want]
print(len(procs), sum(p["kernel_launches"] for p in procs))' "$1"
}
seen_are() { [ "$(seen "$1")" = "$2" ]; } # PIDFILE "PROCESSES LAUNCHES"
daemon_up() { # fails the script at once if the daemon exited
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/daemon.log" >&2; exit 1; }
  curl -sf "$URL/healthz" -o /dev/null
}
drops_in() { awk '/^neutracer_events_dropped_total/ {s += $2} END {printf "%d\n", s}' "$1"; }
# Measures the daemon and PIDS over WINDOW seconds; sets cpu_d, cpu_l, rss, hwm, load_avg
# (machine CPU use over the window, % of all CPUs, and the 1-minute load average at its end).
measure() { # PIDS...
  local d0 l0 m0
  d0=$(cpu_ticks "$daemon_pid"); l0=$(sum_ticks "$@"); m0=$(busy_jiffies)
  sleep "$WINDOW"
  cpu_d=$(pct $(($(cpu_ticks "$daemon_pid") - d0)) "$WINDOW")
  cpu_l=$(pct $(($(sum_ticks "$@") - l0)) "$WINDOW")
  rss=$(mib "$(status_kib "$daemon_pid" VmRSS)")
  hwm=$(mib "$(status_kib "$daemon_pid" VmHWM)")
  load_avg="$(busy_pct "$m0" "$WINDOW")% $(load1)"
}
rows=()
row() { rows+=("$(printf '%-44s | %8s | %8s | %8s | %8s | %10s | %s' "$@")"); }

# --- daemon ---------------------------------------------------------------------------------
"$BUILD/neutracerd" --config "$work/exact.yaml" --listen "127.0.0.1:$PORT" > "$work/daemon.log" 2>&1 &
daemon_pid=$!
wait_until 30 daemon_up

# --- phase 1: launches, allocations, idle ------------------------------------------------------
for i in $(seq "$PROCS"); do
  "$work/daemon_cost_load" "$work/ctl" "$KERNELS" \
    "$(awk -v r="$LAUNCH_RATE" -v n="$PROCS" 'BEGIN {print r / n}')" \
    "$(awk -v r="$ALLOC_RATE" -v n="$PROCS" 'BEGIN {print r / n}')" \
    "$PHASE_SECONDS" "$ALLOC_BYTES" > "$work/load/$i.out" &
  load_pids+=($!)
done
printf '%s\n' "${load_pids[@]}" > "$work/load.pids"
wait_until 30 lines_are "$work/load" ready "$PROCS"
wait_until 30 seen_are "$work/load.pids" "$PROCS 0" # discovered, so probes are attached

touch "$work/ctl/launch"
sleep "$WARMUP"
measure "${load_pids[@]}"
wait_until $((PHASE_SECONDS + 10)) lines_are "$work/load" launched "$PROCS"
sleep 4.5 # two scans
scrape > "$work/launch.txt"
made=$(cat "$work/load"/*.out | awk '$1 == "launched" {n += $3} END {printf "%d\n", n}')
rate=$(cat "$work/load"/*.out | awk '$1 == "launched" {n += $3; t = $4 > t ? $4 : t} END {printf "%d\n", n / t}')
counted=$(sum_for_pids "$work/load.pids" neutracer_cuda_kernel_launches_total . "$work/launch.txt")
odd=$(sum_for_pids "$work/load.pids" neutracer_cuda_kernel_launches_total 'kernel="\[' "$work/launch.txt")
scan_s=$(value neutracer_scan_duration_seconds "$work/launch.txt")
row "(a) $PROCS procs x $KERNELS kernels, $rate launches/s" "$cpu_d" "$rss" "$hwm" "$cpu_l" "$load_avg" \
  "counted $counted of $made launches ([unresolved]/[other]: $odd); last scan ${scan_s}s"
launch_ok=$([ "$counted" = "$made" ] && [ "$odd" = 0 ] && echo yes || echo NO)

touch "$work/ctl/alloc"
sleep "$WARMUP"
measure "${load_pids[@]}"
wait_until $((PHASE_SECONDS + 10)) lines_are "$work/load" allocated "$PROCS"
sleep 4.5
scrape > "$work/alloc.txt"
made=$(cat "$work/load"/*.out | awk '$1 == "allocated" {n += $3} END {printf "%d\n", n}')
rate=$(cat "$work/load"/*.out | awk '$1 == "allocated" {n += $3; t = $5 > t ? $5 : t} END {printf "%d\n", n / t}')
allocs=$(sum_for_pids "$work/load.pids" neutracer_cuda_memory_allocations_total 'kind="device"' "$work/alloc.txt")
frees=$(sum_for_pids "$work/load.pids" neutracer_cuda_memory_frees_total 'kind="device"' "$work/alloc.txt")
used=$(sum_for_pids "$work/load.pids" neutracer_cuda_memory_used_bytes 'kind="device"' "$work/alloc.txt")
drops=$(drops_in "$work/alloc.txt")
scan_s=$(value neutracer_scan_duration_seconds "$work/alloc.txt")
row "(b) $PROCS procs, $rate alloc+free pairs/s" "$cpu_d" "$rss" "$hwm" "$cpu_l" "$load_avg" \
  "counted $allocs allocs, $frees frees of $made each; in use $used B; dropped $drops; last scan ${scan_s}s"
alloc_ok=$([ "$allocs" = "$made" ] && [ "$frees" = "$made" ] && [ "$used" = 0 ] && [ "$drops" = 0 ] && echo yes || echo NO)

sleep 2
measure "${load_pids[@]}"
scrape > "$work/idle.txt"
hwm_small=$hwm
row "(c) same $PROCS procs alive, idle" "$cpu_d" "$rss" "$hwm" "$cpu_l" "$load_avg" \
  "last scan $(value neutracer_scan_duration_seconds "$work/idle.txt")s"

# --- phase 2: TRACKED processes x KERNELS kernels, scrape latency --------------------------------
# Started while the phase 1 processes still map the stand-in, so the probes stay attached.
steps=()
for k in $(seq 0 $((KERNELS - 1))); do steps+=("$(printf 'launch:k%02d:1' "$k")"); done
# START_BATCH processes every 0.2 s: each sends KERNELS name events (56 bytes plus the name)
# through the ring buffer; the names sent during one long scan could overflow a small one (then
# launches count as [unresolved] and neutracer_events_dropped_total grows).
for i in $(seq "$TRACKED"); do
  [ $((i % START_BATCH)) != 0 ] || sleep 0.2
  "$SCENARIO" "${steps[@]}" ready sleep:86400000 > "$work/tracked/$i.out" &
  tracked_pids+=($!)
done
printf '%s\n' "${tracked_pids[@]}" > "$work/tracked.pids"
touch "$work/ctl/stop"
for pid in "${load_pids[@]}"; do wait "$pid"; done
load_pids=()
wait_until 300 lines_are "$work/tracked" ready "$TRACKED"
wait_until 180 seen_are "$work/tracked.pids" "$TRACKED $((TRACKED * KERNELS))" ||
  { echo "daemon saw (processes launches): $(seen "$work/tracked.pids")" >&2; exit 1; }
sleep 2
measure # no scrapes: scans of TRACKED processes alone
rss_tracked=$rss
scrape > "$work/tracked.txt" # then the exact counts, from one scrape
counted=$(sum_for_pids "$work/tracked.pids" neutracer_cuda_kernel_launches_total . "$work/tracked.txt")
named=$(sum_for_pids "$work/tracked.pids" neutracer_cuda_kernel_launches_total 'kernel="k' "$work/tracked.txt")
tracked_ok=$([ "$named" = $((TRACKED * KERNELS)) ] && echo yes || echo NO)
check="counted $counted of $((TRACKED * KERNELS)) launches, $named under their names;"
check+=" dropped $(drops_in "$work/tracked.txt");"
check+=" last scan $(value neutracer_scan_duration_seconds "$work/tracked.txt")s"
row "(d) $TRACKED procs x $KERNELS kernels, no scrapes" "$cpu_d" "$rss" "$hwm" "" "$load_avg" "$check"
# Where that RSS is, by mapping kind (smaps; a mapping mapped twice, as the ring buffer's data
# area, counts twice).
awk '/^[0-9a-f]+-[0-9a-f]+ /{name=$6; if (name == "") name="[anon]";
       else if (name ~ /bpf-map/) name="[bpf maps]"; else if (name ~ /^\//) name="[files]"}
     /^Rss:/{rss[name]+=$2}
     END{printf "    RSS by mapping at (d):"; for (n in rss) printf " %s %.1f MiB;", n, rss[n]/1024; print ""}' \
  "/proc/$daemon_pid/smaps"

# SCRAPES sequential GETs of /metrics with the extra curl arguments given; sets p50 p99 pmax bytes
# and adds a row.
scrape_row() {
  local label=$1
  shift
  local d0 t0 m0 t1 span cpu_d rss hwm lines stats
  d0=$(cpu_ticks "$daemon_pid"); t0=$(date +%s%N); m0=$(busy_jiffies)
  for _ in $(seq "$SCRAPES"); do
    curl -sf --max-time 30 -o /dev/null -w '%{time_total} %{size_download}\n' "$@" "$URL/metrics"
  done > "$work/scrapes.txt"
  t1=$(date +%s%N)
  span=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')
  cpu_d=$(pct $(($(cpu_ticks "$daemon_pid") - d0)) "$span")
  rss=$(mib "$(status_kib "$daemon_pid" VmRSS)"); hwm=$(mib "$(status_kib "$daemon_pid" VmHWM)")
  lines=$(grep -vc '^#' "$work/tracked.txt")
  read -r p50 p99 pmax bytes < <(sort -n "$work/scrapes.txt" | awk '{t[NR] = $1 * 1000; sz = $2}
    function at(q,  i) {i = int(q * NR + 0.999999); return t[i < 1 ? 1 : i]}
    END {printf "%.1f %.1f %.1f %d\n", at(0.5), at(0.99), t[NR], sz}')
  stats="p50 $p50 ms, p99 $p99 ms, max $pmax ms; $(awk -v b="$bytes" 'BEGIN {printf "%.2f", b / 1e6}') MB sent, $lines samples"
  row "$label (${span}s)" "$cpu_d" "$rss" "$hwm" "" "$(busy_pct "$m0" "$span")% $(load1)" "$stats"
}
# (f) as Prometheus asks: gzip (bytes on the wire); (e) last, for the targets below.
scrape_row "(f) $SCRAPES sequential GETs, gzip" -H 'Accept-Encoding: gzip'
gzip_p99=$p99
scrape_row "(e) $SCRAPES sequential GETs /metrics"

# --- report -----------------------------------------------------------------------------------
kill -TERM "${tracked_pids[@]}"
for pid in "${tracked_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
tracked_pids=()
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$BUILD/CMakeCache.txt" 2>/dev/null || true)
echo "$("$BUILD/neutracerd" --version 2>&1 | head -1) (${build_type:-unknown} build in $BUILD);" \
  "$(nproc) CPUs; window ${WINDOW}s; $(date -u +%FT%TZ)"
[ "$build_type" != Debug ] || echo "note: a Debug build (unoptimised); scripts/build.sh builds RelWithDebInfo"
printf '%-44s | %8s | %8s | %8s | %8s | %10s | %s\n' "workload" "daemon %" "RSS MiB" "HWM MiB" \
  "load %" "busy load1" "check"
printf '%s\n' "${rows[@]}"
echo "(daemon % / load %: CPU time over the window as % of one core; load %: the load processes'"
echo " own CPU, which includes the uprobes they trap into; busy: the machine's CPU use over the"
echo " window, % of all $(nproc) CPUs, daemon and load included; load1: /proc/loadavg at the end)"
hwm_kib=$(status_kib "$daemon_pid" VmHWM)
echo "exact counts: launches $launch_ok, allocations $alloc_ok, $TRACKED processes' launches by name $tracked_ok"
cpu_a=$(printf '%s\n' "${rows[0]}" | awk -F'|' '{gsub(/ /, "", $2); print $2}')
echo "targets: daemon <= 2 % at 100k launches/s: $cpu_a % -> $(awk -v c="$cpu_a" 'BEGIN {print c <= 2 ? "met" : "MISSED"}');" \
  "RSS <= 64 MiB: $PROCS procs peak $hwm_small MiB -> $(awk -v m="$hwm_small" 'BEGIN {print m <= 64 ? "met" : "MISSED"}')," \
  "$TRACKED procs $rss_tracked MiB before scrapes, peak $(mib "$hwm_kib") MiB -> $([ "$hwm_kib" -le 65536 ] && echo met || echo MISSED);" \
  "scrape p99 <= 50 ms: $p99 ms -> $(awk -v p="$p99" 'BEGIN {print p <= 50 ? "met" : "MISSED"}')" \
  "(gzip: $gzip_p99 ms)"
