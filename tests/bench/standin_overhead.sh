#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Added cost on traced programs, on the stand-in driver (no GPU needed): ns per launch, ns per
# allocation+free pair, and the aggregate launch rate of several processes at once with exact
# counts. Each repetition runs every measurement without the daemon, then starts the daemon,
# runs them again, and stops it (removing the probes takes the kernel ~15 s), so "with" and
# "without" alternate in one run. Prints median (range) per measurement.
#
# Run as root from the repo root after scripts/build.sh:
#   tests/bench/standin_overhead.sh [REPS] [LAUNCHES] [ALLOCS] [PROCS]
set -euo pipefail
REPS=${1:-5}
LAUNCHES=${2:-2000000}
ALLOCS=${3:-500000}
PROCS=${4:-2}
BUILD=${BUILD:-build}
SCENARIO=$BUILD/tests/standin/neutracer-scenario
PORT=${PORT:-19601}
work=$(mktemp -d)
# Every launch counted (the per-launch price of a probe): exact mode, not the adaptive default.
echo "cuda: {launch_counting: exact}" > "$work/exact.yaml"
daemon_pid=""
trap '[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

now_ns() { date +%s%N; }
scrape() { curl -s "127.0.0.1:$PORT/metrics"; }

# Sum of a process's launches of one kernel as the daemon reports them.
counted_for() { # PID KERNEL
  scrape | awk -v pid="pid=\"$1\"" -v k="kernel=\"$2\"" \
    '/^neutracer_cuda_kernel_launches_total/ && index($0, pid) && index($0, k) {s += $2} END {print s + 0}'
}

# Runs one scenario with STEPS after `ready`, timed from `ready` to the wait step; prints ns.
# With the daemon up, also records what it counted for the process in $work/counted.
timed_scenario() { # KERNEL STEPS...
  local kernel=$1; shift
  local id=$RANDOM$RANDOM out="$work/s$RANDOM$RANDOM.out" stop="$work/stop$RANDOM$RANDOM"
  "$SCENARIO" ready "$@" "wait:$stop" > "$out" &
  local pid_bg=$!
  until grep -q '^ready' "$out" 2>/dev/null; do sleep 0.001; done
  local start end pid
  start=$(now_ns)
  until grep -q '^waiting' "$out"; do sleep 0.001; done
  end=$(now_ns)
  pid=$(awk '/^ready/ {print $2}' "$out")
  if [ -n "$daemon_pid" ] && [ -n "$kernel" ]; then
    sleep 2.5 # one scan at the default 2 s interval, plus margin
    echo $(( $(cat "$work/counted" 2>/dev/null || echo 0) + $(counted_for "$pid" "$kernel") )) > "$work/counted"
  fi
  touch "$stop"
  wait "$pid_bg"
  echo $((end - start))
}

# PROCS processes launching at once; prints the aggregate launches per second.
aggregate_rate() {
  local outs=() stops=() pids=() i
  for i in $(seq "$PROCS"); do
    outs+=("$work/a$i.out"); stops+=("$work/astop$i"); rm -f "$work/astop$i" "$work/ago"
  done
  for i in $(seq "$PROCS"); do
    "$SCENARIO" ready "wait:$work/ago" "launch:agg_kernel:$LAUNCHES" "wait:${stops[$((i-1))]}" \
      > "${outs[$((i-1))]}" &
    pids+=($!)
  done
  for out in "${outs[@]}"; do until grep -q '^waiting' "$out" 2>/dev/null; do sleep 0.001; done; done
  [ -n "$daemon_pid" ] && sleep 2.5 # discovered before the launches start
  local start end
  start=$(now_ns)
  touch "$work/ago"
  for out in "${outs[@]}"; do until [ "$(grep -c '^waiting' "$out")" -ge 2 ]; do sleep 0.001; done; done
  end=$(now_ns)
  if [ -n "$daemon_pid" ]; then
    sleep 2.5
    local total=0 pid
    for out in "${outs[@]}"; do
      pid=$(awk '/^ready/ {print $2}' "$out")
      total=$((total + $(counted_for "$pid" agg_kernel)))
    done
    echo $(( $(cat "$work/agg_counted" 2>/dev/null || echo 0) + total )) > "$work/agg_counted"
  fi
  touch "${stops[@]}"
  wait "${pids[@]}"
  echo $(( PROCS * LAUNCHES * 1000000000 / (end - start) ))
}

measure() { # LABEL: appends one sample of each measurement to $work/<label>.*
  local label=$1
  echo $(( $(timed_scenario bench_kernel "launch:bench_kernel:$LAUNCHES") / LAUNCHES )) >> "$work/$label.launch"
  echo $(( $(timed_scenario "" "alloc:1024:$ALLOCS" "free:$ALLOCS") / ALLOCS )) >> "$work/$label.alloc"
  aggregate_rate >> "$work/$label.rate"
}

# A process that keeps the stand-in mapped, so attaching happens once per daemon start.
"$SCENARIO" ready "wait:$work/holder-stop" > "$work/holder.out" &
for rep in $(seq "$REPS"); do
  measure without
  "$BUILD/neutracerd" --listen "127.0.0.1:$PORT" --config "$work/exact.yaml" > "$work/daemon.log" 2>&1 &
  daemon_pid=$!
  until scrape 2>/dev/null | grep -q '^neutracer_attached_libraries 1'; do sleep 0.2; done
  measure with
  kill -TERM "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=""
  echo "repetition $rep of $REPS done" >&2
done
touch "$work/holder-stop"

summary() { # FILE
  sort -n "$1" | awk '{a[NR]=$1} END {printf "%d (%d-%d)", a[int((NR+1)/2)], a[1], a[NR]}'
}
echo "machine: $(nproc) CPUs, $(uname -r); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-42s %-22s %-22s\n' "measurement (median (range), $REPS runs)" "without neutracerd" "with neutracerd"
printf '%-42s %-22s %-22s\n' "ns per cuLaunchKernel ($LAUNCHES per run)" "$(summary "$work/without.launch")" "$(summary "$work/with.launch")"
printf '%-42s %-22s %-22s\n' "ns per cuMemAlloc+cuMemFree ($ALLOCS pairs)" "$(summary "$work/without.alloc")" "$(summary "$work/with.alloc")"
printf '%-42s %-22s %-22s\n' "launches/s, $PROCS processes at once" "$(summary "$work/without.rate")" "$(summary "$work/with.rate")"
echo "launches counted by the daemon: single-process $(cat "$work/counted") of $((REPS * LAUNCHES)); aggregate $(cat "$work/agg_counted") of $((REPS * PROCS * LAUNCHES))"
