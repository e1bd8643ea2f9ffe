#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Takes the README's screenshot of the daemon's flame graph (docs/images/flame-graph.png).
#
# Usage (as root: the daemon loads BPF programs):
#   scripts/flame_screenshot.sh NEUTRACERD [STANDIN_DIR] [OUTPUT_PNG]
#     NEUTRACERD   the daemon binary (e.g. build/neutracerd)
#     STANDIN_DIR  where the stand-in driver libcuda.so.1 is
#                  (default: tests/standin next to NEUTRACERD, as in a build tree)
#     OUTPUT_PNG   default docs/images/flame-graph.png
#   BY=launch_samples (or allocated_bytes, wait_seconds, ...) photographs another weight;
#   DEMO=python runs scripts/flame_demo.py (the same trainer in Python, through ctypes, with
#   PYTHON, default python3: CPython 3.9-3.13) instead of scripts/flame_demo.c, so the graph
#   shows the script's functions and lines (default output docs/images/flame-graph-python.png);
#   CHROMIUM names the browser (default chromium).
#
# It builds scripts/flame_demo.c (a stand-in "trainer" with frame pointers) against a copy of
# the stand-in driver, starts the daemon on 127.0.0.1:19777 with a private config (a launch
# stack every 10 launches), runs 40 training steps once the daemon traces the trainer, waits
# until /api/v1/processes/<pid>/sites has every call, screenshots /flame?pid=<pid> in headless
# Chromium, and stops everything it started. The daemon also sees other CUDA processes on the
# host; only the trainer's pid is used.
set -euo pipefail

if [[ $# -lt 1 || $# -gt 3 ]]; then
  sed -n '5,13p' "$0" >&2
  exit 2
fi
daemon_bin=$(realpath "$1")
standin_dir=$(realpath "${2:-$(dirname "$daemon_bin")/tests/standin}")
repo=$(cd "$(dirname "$0")/.." && pwd)
demo=${DEMO:-c}
[[ $demo == c || $demo == python ]] || { echo "DEMO is c or python, not $demo" >&2; exit 2; }
default_output=$repo/docs/images/flame-graph.png
[[ $demo == python ]] && default_output=$repo/docs/images/flame-graph-python.png
output=$(realpath -m "${3:-$default_output}")
python=${PYTHON:-python3}
chromium=${CHROMIUM:-chromium}
port=19777
steps=40
by=${BY:-}

[[ $(id -u) == 0 ]] || { echo "run as root: the daemon loads BPF programs" >&2; exit 1; }
[[ -x $daemon_bin ]] || { echo "no daemon binary at $daemon_bin" >&2; exit 1; }
[[ -f $standin_dir/libcuda.so.1 ]] || { echo "no stand-in libcuda.so.1 in $standin_dir" >&2; exit 1; }
command -v "$chromium" > /dev/null || { echo "no $chromium" >&2; exit 1; }
if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
  echo "something already listens on 127.0.0.1:$port" >&2
  exit 1
fi

work=$(mktemp -d /tmp/neutracer-flame-shot.XXXXXX)
daemon_pid="" demo_pid=""
cleanup() {
  local rc=$?
  if [[ -n $demo_pid ]]; then
    touch "$work/exit"
    for _ in $(seq 50); do kill -0 "$demo_pid" 2> /dev/null || break; sleep 0.1; done
    kill -KILL "$demo_pid" 2> /dev/null || true
    wait "$demo_pid" 2> /dev/null || true
  fi
  if [[ -n $daemon_pid ]]; then
    # Removing its uprobes takes the kernel several seconds.
    kill -TERM "$daemon_pid" 2> /dev/null || true
    for _ in $(seq 600); do kill -0 "$daemon_pid" 2> /dev/null || break; sleep 0.1; done
    kill -KILL "$daemon_pid" 2> /dev/null || true
    wait "$daemon_pid" 2> /dev/null || true
  fi
  if [[ $rc != 0 ]]; then
    echo "failed; the daemon's log:" >&2
    tail -n 20 "$work/daemon.log" >&2 2> /dev/null || true
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local seconds=$1
  shift
  for _ in $(seq $((seconds * 5))); do
    "$@" && return 0
    sleep 0.2
  done
  return 1
}

# The trainer, next to its own copy of the stand-in driver (RUNPATH $ORIGIN).
cp "$standin_dir/libcuda.so.1" "$work/"
if [[ $demo == c ]]; then
  # shellcheck disable=SC2016 # $ORIGIN is for the linker
  cc -O1 -fno-omit-frame-pointer -fno-inline -fno-optimize-sibling-calls -Wall -Wextra \
    -I "$repo/tests/standin" "$repo/scripts/flame_demo.c" -o "$work/demo-trainer" \
    "$work/libcuda.so.1" -Wl,-rpath,'$ORIGIN'
  trainer=("$work/demo-trainer")
else
  trainer=("$python" "$repo/scripts/flame_demo.py" "$work/libcuda.so.1")
fi

cat > "$work/neutracerd.yaml" << 'EOF'
# A launch stack every 10 launches (default 1000), so 40 short steps give a launch profile.
stacks: {enabled: true, launch_sample_every: 10}
EOF
"$daemon_bin" --config "$work/neutracerd.yaml" --listen "127.0.0.1:$port" \
  --scan-interval 200ms > "$work/daemon.log" 2>&1 &
daemon_pid=$!
wait_for 60 curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" ||
  { echo "the daemon did not become healthy" >&2; exit 1; }

# 80 GiB of simulated device memory, like an H100's.
NEUTRACER_STANDIN_CAPACITY=$((80 << 30)) \
  "${trainer[@]}" "$work/go" "$work/exit" "$steps" > "$work/demo.out" 2> "$work/demo.err" &
demo_pid=$!
wait_for 10 grep -q '^ready ' "$work/demo.out" || { echo "the trainer did not start" >&2; exit 1; }
pid=$(awk '/^ready /{print $2}' "$work/demo.out")
sites="http://127.0.0.1:$port/api/v1/processes/$pid/sites"
# Attaching uprobes can take a while on a busy host; calls before it would be missed.
wait_for 120 curl -sf -o /dev/null "$sites" ||
  { echo "the daemon never traced pid $pid" >&2; exit 1; }
sleep 1 # a few scans: a Python trainer's interpreter found and given to the probes
touch "$work/go"
wait_for 60 grep -q '^done$' "$work/demo.out" || { echo "the trainer did not finish" >&2; exit 1; }

# Every call published: 32 + steps allocations still live, steps waits, some launch samples.
all_sites() {
  curl -sf "$sites" | python3 -c '
import json, sys
steps = int(sys.argv[1])
counts = [site["counts"] for site in json.load(sys.stdin)["sites"]]
total = lambda key: sum(c[key] for c in counts)
sys.exit(0 if total("live_allocations") == 32 + steps and total("waits") == steps
         and total("launch_samples") > 0 else 1)' "$steps"
}
wait_for 30 all_sites || { echo "the sites of pid $pid never filled:" >&2; curl -s "$sites" >&2; exit 1; }

mkdir -p "$(dirname "$output")"
"$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --user-data-dir="$work/chromium" --window-size=1240,310 --screenshot="$output" \
  "http://127.0.0.1:$port/flame?pid=$pid${by:+&by=$by}" > "$work/chromium.log" 2>&1 ||
  { cat "$work/chromium.log" >&2; exit 1; }
echo "$output: $(stat -c %s "$output") bytes, /flame?pid=$pid${by:+&by=$by}"
