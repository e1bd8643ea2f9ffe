#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The daemon's C++ heap at many traced processes (issue 19, item 1), without root, BPF or the
# processes: tests/bench/daemon_heap.cpp drives the real DaemonLoop over a generated /proc tree
# and a fake BPF side, then the real /metrics handler. Run from the repo root:
#   tests/bench/daemon_heap.sh [PROCS] [KERNELS] [SCANS] [ARRIVING]
# (defaults 1000, 50, 5, 0; env BUILD=build): ARRIVING processes start before each scan (0: all
# before the first), then SCANS scans with nothing new.
# Prints per scan its time, the heap held after it and its peak (every operator new counted),
# and the process's RSS (glibc's arenas included, no BPF maps); then the snapshot's documents and
# what a plain and a gzip scrape add. For where the heap goes, run the binary under heaptrack:
# it exits without tearing down, so heaptrack's "leaked" is what the daemon holds between scans:
#   heaptrack -o /tmp/heap build/tests/neutracer_daemon_heap 1000 50 5
#   heaptrack_print -f /tmp/heap.zst --print-leaks 1
set -euo pipefail
BUILD=${BUILD:-build}
cmake --build "$BUILD" --target neutracer_daemon_heap >/dev/null
# The loop logs through spdlog's default logger: its info lines are not the figures.
"$BUILD/tests/neutracer_daemon_heap" "${1:-1000}" "${2:-50}" "${3:-5}" "${4:-0}" | grep -v '^\['
