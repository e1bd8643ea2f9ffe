# SPDX-License-Identifier: Apache-2.0
"""Driven by python_frames_cost.cpp: calls the probed C function in a loop under a Python stack
of a chosen depth and prints the nanoseconds per call, once per "run" line on stdin.

    python3 python_frames_cost.py LIBRARY DEPTH CALLS
"""
import ctypes
import sys
import time

target = ctypes.CDLL(sys.argv[1]).nt_py_frames_target
target.argtypes = [ctypes.c_int]
DEPTH = int(sys.argv[2])
CALLS = int(sys.argv[3])


def loop():
    start = time.perf_counter_ns()
    for _ in range(CALLS):
        target(1)
    return (time.perf_counter_ns() - start) / CALLS


def at_depth(levels):
    # The stack the probe walks: DEPTH frames of at_depth, the loop, then <module>.
    if levels > 0:
        return at_depth(levels - 1)
    print("ready", flush=True)
    for _ in sys.stdin:
        print(f"{loop():.1f}", flush=True)


at_depth(DEPTH)
