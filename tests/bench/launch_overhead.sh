#!/usr/bin/env bash
# Added cost per kernel launch under neutracerd, on the stand-in driver (no GPU needed).
# Runs REPS times with the daemon attached, then REPS times after it exited (removing probes
# takes seconds, so runs are grouped, not alternated), LAUNCHES launches per run, and prints
# the median and range of ns per launch and how many launches the daemon counted. Run as root from the repo root after
# scripts/build.sh:  tests/bench/launch_overhead.sh [REPS] [LAUNCHES]
set -euo pipefail
REPS=${1:-7}
LAUNCHES=${2:-2000000}
BUILD=${BUILD:-build}
SCENARIO=$BUILD/tests/standin/neutracer-scenario
PORT=${PORT:-19601}
work=$(mktemp -d)
daemon_pid=""
trap '[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

run_index=0
counted=0
# Prints ns per launch of one run; with the daemon up, adds what it counted for that process
# (read while the process is still alive: a process's series go when it exits).
ns_per_launch() {
  local start end out="$work/run$run_index.out" stop="$work/stop$run_index" pid
  run_index=$((run_index + 1))
  start=$(date +%s%N)
  "$SCENARIO" "launch:bench_kernel:$LAUNCHES" ready "wait:$stop" > "$out" &
  local scenario_pid=$!
  until grep -q '^ready' "$out"; do sleep 0.001; done
  end=$(date +%s%N)
  pid=$(awk '/^ready/ {print $2}' "$out")
  if [ -n "$daemon_pid" ]; then
    sleep 0.6 # three scans
    counted=$((counted + $(curl -s "127.0.0.1:$PORT/metrics" |
      awk -v pid="pid=\"$pid\"" 'index($0, pid) && /kernel="bench_kernel"/ {s += $2} END {print s + 0}')))
  fi
  touch "$stop"
  wait "$scenario_pid"
  echo $(( (end - start) / LAUNCHES ))
}

# A process that keeps the stand-in mapped, so the daemon stays attached between runs.
"$SCENARIO" ready "wait:$work/stop" > "$work/holder.out" &
"$BUILD/neutracerd" --listen "127.0.0.1:$PORT" --scan-interval 200ms --config /dev/null \
  > "$work/daemon.log" 2>&1 &
daemon_pid=$!
until curl -sf "127.0.0.1:$PORT/metrics" 2>/dev/null | grep -q '^neutracer_attached_libraries 1'; do
  sleep 0.2
done

without=(); with=()
for _ in $(seq "$REPS"); do
  ns_per_launch > "$work/ns"
  with+=("$(cat "$work/ns")")
done
kill -TERM "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=""
for _ in $(seq "$REPS"); do
  ns_per_launch > "$work/ns"
  without+=("$(cat "$work/ns")")
done
touch "$work/stop"

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
range() { printf '%s\n' "$@" | sort -n | awk 'NR==1{lo=$1} {hi=$1} END {print lo "-" hi}'; }
echo "launches per run: $LAUNCHES, runs: $REPS each"
echo "without daemon: median $(median "${without[@]}") ns/launch (range $(range "${without[@]}"))"
echo "with daemon:    median $(median "${with[@]}") ns/launch (range $(range "${with[@]}"))"
echo "launches counted by the daemon: $counted of $((REPS * LAUNCHES))"
