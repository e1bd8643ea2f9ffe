# SPDX-License-Identifier: Apache-2.0
"""Allocates through the stand-in driver's cuMemAlloc_v2, called through ctypes, for
tests/privileged/call_sites_e2e_test.cpp: one request too big for the stand-in (out of memory),
then 4 MiB kept every 0.2 s, and 1 MiB kept every other step from a second line. The daemon
must name the marked lines: its kernel-side walk takes
the Python frames at each allocation's return.

    python3 alloc_script.py LIBCUDA GO_FILE EXIT_FILE GROW_STEPS
"""
import ctypes
import os
import sys
import time


def ask_too_much(cuda):
    pointer = ctypes.c_ulonglong(0)
    return cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(2 << 30))  # the failing line


def grow(cuda, steps):
    for step in range(steps):
        pointer = ctypes.c_ulonglong(0)
        cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(4 << 20))  # the leaking line
        if step % 2 == 0:
            cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(1 << 20))  # the smaller leak
        time.sleep(0.2)


def wait_for_file(path):
    while not os.path.exists(path):
        time.sleep(0.01)


def main():
    library, go, done, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    cuda = ctypes.CDLL(library)
    cuda.cuInit(0)
    print(f"ready {os.getpid()} {sys.version_info.major}.{sys.version_info.minor}", flush=True)
    wait_for_file(go)
    print(f"failed {ask_too_much(cuda)}", flush=True)
    grow(cuda, steps)
    print("grown", flush=True)
    wait_for_file(done)


if __name__ == "__main__":
    main()
