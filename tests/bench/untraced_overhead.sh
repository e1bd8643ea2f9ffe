#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Cost of the OS tracer (sched_switch and friends) on processes: a pipe ping-pong pinned to one
# CPU (two context switches per round trip), REPS runs each of: no daemon; daemon running but
# the benchmark untraced (it maps no libcuda); daemon running and the benchmark traced (it maps
# the stand-in libcuda.so.1 through LD_PRELOAD, so the daemon discovers it). Prints the median
# and range of ns per round trip. Run as root from the repo root after scripts/build.sh:
#   tests/bench/untraced_overhead.sh [REPS] [ROUNDTRIPS]
set -euo pipefail
REPS=${1:-9}
ROUNDS=${2:-300000}
BUILD=${BUILD:-build}
PORT=${PORT:-19602}
STANDIN=$(cd "$BUILD/tests/standin" && pwd)/libcuda.so.1
work=$(mktemp -d)
daemon_pid=""
trap '[ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
cc -O2 -o "$work/pingpong" tests/bench/pingpong.c

runs() { # runs LABEL [env...]: REPS runs, prints "LABEL median (min-max)"
  local label=$1; shift
  local values=()
  for _ in $(seq "$REPS"); do values+=("$(env "$@" "$work/pingpong" "$ROUNDS" 700)"); done
  printf '%s\n' "${values[@]}" | sort -n | awk -v l="$label" '
    {v[NR] = $1} END {printf "%-34s %6d ns  (%d-%d)\n", l, v[int((NR + 1) / 2)], v[1], v[NR]}'
}

runs "without neutracerd"
"$BUILD/neutracerd" --listen "127.0.0.1:$PORT" --scan-interval 200ms --config /dev/null \
  > "$work/daemon.log" 2>&1 &
daemon_pid=$!
until curl -sf "127.0.0.1:$PORT/healthz" >/dev/null 2>&1; do sleep 0.2; done
runs "with neutracerd, untraced"
# Both processes sleep 700 ms (3 scans) before timing starts, so they are traced throughout.
runs "with neutracerd, traced" LD_PRELOAD="$STANDIN"
grep -c "attached" "$work/daemon.log" | sed 's/^/(daemon log lines about attaching: /; s/$/; expect >= 1)/'
kill -TERM "$daemon_pid"; wait "$daemon_pid" || true; daemon_pid=""
runs "without neutracerd, again"
