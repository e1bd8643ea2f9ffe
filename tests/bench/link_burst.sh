#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# How fast the daemon closes the launch links of processes that exit together. Run as root
# from the repo root after scripts/build.sh:
#   tests/bench/link_burst.sh [BUILD_DIR] [PROCESSES]      (defaults: build, 1000)
# Starts the daemon with its defaults (adaptive launch counting: per-process launch links),
# then PROCESSES stand-in processes that launch 50 kernels each and exit together, and prints
# the daemon's bpf_link descriptors and the live processes every 2 s for 40 s.
set -euo pipefail
BUILD=${1:-build}
PROCESSES=${2:-1000}
PORT=${PORT:-19621}
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
"$BUILD/neutracerd" --config /dev/null --listen "127.0.0.1:$PORT" --log-level warn 2>/dev/null &
daemon=$!
trap 'kill -TERM $daemon 2>/dev/null; wait $daemon 2>/dev/null || true' EXIT
sleep 3
steps="sleep:2500"
for k in $(seq 50); do steps="$steps launch:kernel_number_$k:1"; done
steps="$steps sleep:3000"
for _ in $(seq "$PROCESSES"); do
  # shellcheck disable=SC2086 # the steps are separate arguments
  "$BUILD/tests/standin/neutracer-scenario" $steps >/dev/null &
done
links() { find "/proc/$daemon/fd" -lname 'anon_inode:bpf_link' 2>/dev/null | wc -l; }
for t in $(seq 0 2 40); do
  echo "t=${t}s bpf_link=$(links) processes=$(pgrep -fc neutracer-scenario || true)"
  sleep 2
done
