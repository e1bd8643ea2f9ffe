# SPDX-License-Identifier: Apache-2.0
"""Launches a stand-in kernel many times through ctypes, for
tests/privileged/call_sites_e2e_test.cpp: the sampled launch stacks must name the marked line
(the launch probe takes the Python frames with each sample).

    python3 launch_script.py LIBCUDA GO_FILE EXIT_FILE LAUNCHES
"""
import ctypes
import os
import sys
import time


def launch_many(cuda, kernel, count):
    for _ in range(count):
        cuda.cuLaunchKernel(kernel, 1, 1, 1, 128, 1, 1, 0, None, None, None)  # the launching line


def wait_for_file(path):
    while not os.path.exists(path):
        time.sleep(0.01)


def main():
    library, go, done, launches = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    cuda = ctypes.CDLL(library)
    cuda.cuInit(0)
    module, kernel = ctypes.c_void_p(), ctypes.c_void_p()
    cuda.cuModuleLoadData(ctypes.byref(module), b"python launch module")
    cuda.cuModuleGetFunction(ctypes.byref(kernel), module, b"py_kernel")
    print(f"ready {os.getpid()} {sys.version_info.major}.{sys.version_info.minor}", flush=True)
    wait_for_file(go)
    launch_many(cuda, kernel, launches)
    print("launched", flush=True)
    wait_for_file(done)


if __name__ == "__main__":
    main()
