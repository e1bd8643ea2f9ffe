#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What call-site stacks cost the traced program, on the stand-in driver (no GPU needed): the BPF
# time per hit of the launch, call entry and call return programs (kernel.bpf_stats_enabled),
# and the wall time per launch, per allocation + free pair and per sync, with stacks off and on.
# Each repetition starts the daemon with stacks off, measures, restarts it with stacks on,
# measures again; the programs counted are the daemon's own (by its pid), so other daemons on
# the host do not mix in.
#
# Run as root from the repo root after scripts/build.sh:
#   tests/bench/stacks_cost.sh [REPS] [LAUNCHES] [ALLOCS] [SYNCS]
set -euo pipefail
REPS=${1:-3}
LAUNCHES=${2:-2000000}
ALLOCS=${3:-200000}
SYNCS=${4:-100000}
BUILD=${BUILD:-build}
SCENARIO=$BUILD/tests/standin/neutracer-scenario
SITES=$BUILD/tests/standin/neutracer-sites
PORT=${PORT:-19611}
work=$(mktemp -d)
daemon_pid=""
stats_before=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null
  wait 2>/dev/null
  sysctl -q -w kernel.bpf_stats_enabled="$stats_before"
  rm -rf "$work"
}
trap cleanup EXIT
sysctl -q -w kernel.bpf_stats_enabled=1

# Exact counting: every launch is probed, so the launch program's cost per hit is the price.
echo "cuda: {launch_counting: exact}
stacks: {enabled: false}" > "$work/off.yaml"
echo "cuda: {launch_counting: exact}
stacks: {enabled: true, launch_sample_every: 1000}" > "$work/on.yaml"

scrape() { curl -s "127.0.0.1:$PORT/metrics"; }
now_ns() { date +%s%N; }

# run_cnt and run_time_ns of the daemon's program NAME, as "count ns": from the fdinfo of the
# daemon's own program descriptors, so other daemons' programs of the same name do not count.
prog_stats() { # NAME
  python3 - "$1" "$daemon_pid" <<'PY'
import os, re, subprocess, sys
name, pid = sys.argv[1], sys.argv[2]
seen, count, time = set(), 0, 0
for fd in os.listdir(f"/proc/{pid}/fdinfo"):
    try:
        info = open(f"/proc/{pid}/fdinfo/{fd}").read()
    except OSError:
        continue
    found = re.search(r"^prog_id:\s+(\d+)", info, re.M)
    if not found or found.group(1) in seen:
        continue
    seen.add(found.group(1))
    shown = subprocess.run(["bpftool", "prog", "show", "id", found.group(1)],
                           capture_output=True, text=True).stdout
    if f" name {name} " not in shown.splitlines()[0] + " ":
        continue
    count += int(re.search(r"^run_cnt:\s+(\d+)", info, re.M).group(1))
    time += int(re.search(r"^run_time_ns:\s+(\d+)", info, re.M).group(1))
print(count, time)
PY
}

# Times STEPS of one program run from `ready` to its wait step; prints ns.
timed() { # PROGRAM STEPS...
  local program=$1; shift
  local out="$work/t$RANDOM$RANDOM.out" stop="$work/stop$RANDOM$RANDOM"
  "$program" ready "$@" "wait:$stop" > "$out" &
  local pid_bg=$! start end
  until grep -q '^ready' "$out" 2>/dev/null; do sleep 0.001; done
  start=$(now_ns)
  until grep -q '^waiting' "$out"; do sleep 0.001; done
  end=$(now_ns)
  touch "$stop"
  wait "$pid_bg"
  echo $((end - start))
}

# BPF ns per hit of NAME over one command's run: "ns count".
per_hit() { # NAME COMMAND...
  local name=$1; shift
  local before after
  before=$(prog_stats "$name")
  "$@" > /dev/null
  after=$(prog_stats "$name")
  python3 -c 'import sys
c0, t0, c1, t1 = map(int, sys.argv[1:])
print("%.0f %d" % ((t1 - t0) / max(1, c1 - c0), c1 - c0))' $before $after
}

measure() { # LABEL
  local label=$1
  echo $(( $(timed "$SCENARIO" "launch:bench_kernel:$LAUNCHES") / LAUNCHES )) >> "$work/$label.launch_wall"
  echo $(( $(timed "$SCENARIO" "alloc:1024:$ALLOCS" "free:$ALLOCS") / ALLOCS )) >> "$work/$label.alloc_wall"
  echo $(( $(timed "$SCENARIO" $(printf 'sync:0 %.0s' $(seq 1 1000))) / 1000 )) >> "$work/$label.sync_wall"
  per_hit launch_handle_arg1 timed "$SCENARIO" "launch:bench_kernel:$LAUNCHES" | cut -d' ' -f1 >> "$work/$label.launch_bpf"
  # The sites program launches from a frame-pointer stack: a walk of real depth when sampled.
  per_hit launch_handle_arg1 timed "$SITES" "launch:$LAUNCHES" | cut -d' ' -f1 >> "$work/$label.launch_fp_bpf"
  per_hit call_exit timed "$SITES" "leak:1024:$ALLOCS" | cut -d' ' -f1 >> "$work/$label.alloc_exit_bpf"
  per_hit call_enter timed "$SITES" $(printf 'sync:0 %.0s' $(seq 1 2000)) | cut -d' ' -f1 >> "$work/$label.sync_enter_bpf"
}

start_daemon() { # CONFIG
  "$BUILD/neutracerd" --listen "127.0.0.1:$PORT" --config "$1" > "$work/daemon.log" 2>&1 &
  daemon_pid=$!
  # Attached once a stand-in process maps the library: the holder below keeps one mapped.
  until scrape 2>/dev/null | grep -q '^neutracer_attached_libraries [1-9]'; do sleep 0.2; done
}
stop_daemon() { kill -TERM "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=""; }

"$SCENARIO" ready "wait:$work/holder-stop" > "$work/holder.out" &
for rep in $(seq "$REPS"); do
  for label in off on; do
    start_daemon "$work/$label.yaml"
    measure "$label"
    stop_daemon
  done
  echo "repetition $rep of $REPS done" >&2
done
touch "$work/holder-stop"

# Median (min-max): on a busy host the minimum is the least disturbed run.
summary() { sort -n "$1" | awk '{a[NR]=$1} END {printf "%d (%d-%d)", a[int((NR+1)/2)], a[1], a[NR]}'; }
echo "machine: $(nproc) CPUs, $(uname -r); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-52s %-20s %-20s\n' "measurement (median (range), $REPS runs)" "stacks off" "stacks on"
for row in "launch_bpf:BPF ns per launch (launch program)" \
           "launch_fp_bpf:BPF ns per launch, frame-pointer caller" \
           "alloc_exit_bpf:BPF ns per allocation return (call_exit)" \
           "sync_enter_bpf:BPF ns per sync entry (call_enter)" \
           "launch_wall:wall ns per cuLaunchKernel" \
           "alloc_wall:wall ns per cuMemAlloc+cuMemFree" \
           "sync_wall:wall ns per cuStreamSynchronize"; do
  key=${row%%:*}; text=${row#*:}
  printf '%-52s %-20s %-20s\n' "$text" "$(summary "$work/off.$key")" "$(summary "$work/on.$key")"
done
