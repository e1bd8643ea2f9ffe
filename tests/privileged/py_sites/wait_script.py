# SPDX-License-Identifier: Apache-2.0
"""Waits in the stand-in driver's cuCtxSynchronize, called through ctypes, for
tests/privileged/call_sites_e2e_test.cpp: while it waits, the daemon must name wait_for_gpu and
the line marked below.

    python3 wait_script.py LIBCUDA GO_FILE EXIT_FILE SYNC_MS
"""
import ctypes
import os
import sys
import time


def wait_for_gpu(cuda):
    return cuda.cuCtxSynchronize()  # the waiting line


def wait_for_file(path):
    while not os.path.exists(path):
        time.sleep(0.01)


def main():
    library, go, done, sync_ms = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    cuda = ctypes.CDLL(library)
    cuda.cuInit(0)
    cuda.neutracer_standin_set_sync_ms(sync_ms)
    print(f"ready {os.getpid()} {sys.version_info.major}.{sys.version_info.minor}", flush=True)
    wait_for_file(go)
    pointer = ctypes.c_ulonglong(0)
    cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(4096))
    print(f"waited {wait_for_gpu(cuda)}", flush=True)
    wait_for_file(done)


if __name__ == "__main__":
    main()
