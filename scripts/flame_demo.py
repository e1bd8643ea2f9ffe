#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""demo-trainer in Python: the program scripts/flame_screenshot.sh photographs with DEMO=python.
The same call tree as flame_demo.c, written as a Python training loop that drives the stand-in
CUDA driver through ctypes (no GPU needed), so the daemon's flame graph shows the script's own
functions and lines above the driver calls (docs/python-frames.md).

    python3 flame_demo.py LIBCUDA GO_FILE EXIT_FILE STEPS

Prints "ready <pid>", waits until GO_FILE exists, runs STEPS training steps, prints "done",
waits until EXIT_FILE exists and exits 0, leaving its memory allocated (run with
NEUTRACER_STANDIN_CAPACITY of at least 32 GiB): parameters 8 x 768 MiB, gradients 8 x 768 MiB
and optimizer state 16 x 768 MiB at the first step, 96 MiB of activations every step (the
leak); attention() takes a 512 MiB workspace each step and frees it. Each step launches 42
kernels and waits 20 ms in cuStreamSynchronize.
"""
import ctypes
import os
import sys
import time

MiB = 1 << 20
LAYERS, BLOCKS = 8, 4


class Driver:
    def __init__(self, library):
        self.cuda = ctypes.CDLL(library)
        self.check(self.cuda.cuInit(0), "cuInit")
        self.module = ctypes.c_void_p()
        self.check(self.cuda.cuModuleLoadData(ctypes.byref(self.module), b"demo-trainer module"),
                   "cuModuleLoadData")
        self.kernels = {}

    @staticmethod
    def check(result, call):
        if result != 0:
            sys.exit(f"{call} returned {result}")

    def kernel(self, name):
        if name not in self.kernels:
            function = ctypes.c_void_p()
            self.check(self.cuda.cuModuleGetFunction(ctypes.byref(function), self.module,
                                                      name.encode()), "cuModuleGetFunction")
            self.kernels[name] = function
        return self.kernels[name]


def launch(gpu, name, count):
    for _ in range(count):
        gpu.check(gpu.cuda.cuLaunchKernel(gpu.kernel(name), 64, 1, 1, 128, 1, 1, 0, None, None,
                                          None), "cuLaunchKernel")


def device_alloc(gpu, size):
    block = ctypes.c_ulonglong(0)
    gpu.check(gpu.cuda.cuMemAlloc_v2(ctypes.byref(block), ctypes.c_size_t(size)), "cuMemAlloc_v2")
    return block.value


def load_model(gpu):
    return [device_alloc(gpu, 768 * MiB) for _ in range(LAYERS)]


def attention(gpu):
    workspace = ctypes.c_ulonglong(0)
    gpu.check(gpu.cuda.cuMemAllocAsync(ctypes.byref(workspace), ctypes.c_size_t(512 * MiB), None),
              "cuMemAllocAsync")
    launch(gpu, "flash_attention_fwd", 2)
    launch(gpu, "rotary_embedding", 1)
    gpu.check(gpu.cuda.cuMemFreeAsync(workspace, None), "cuMemFreeAsync")


def mlp(gpu):
    launch(gpu, "gemm_bf16", 2)


def forward(gpu):
    launch(gpu, "embedding_lookup", 1)
    for _ in range(BLOCKS):
        attention(gpu)
        mlp(gpu)


def save_activations(gpu, kept):
    kept.append(device_alloc(gpu, 96 * MiB))


def backward(gpu, state):
    if "gradients" not in state:
        state["gradients"] = [device_alloc(gpu, 768 * MiB) for _ in range(LAYERS)]
    launch(gpu, "gemm_bf16_backward", 20)


def optimizer_step(gpu, state):
    if "moments" not in state:
        state["moments"] = [device_alloc(gpu, 768 * MiB) for _ in range(2 * LAYERS)]
    launch(gpu, "adamw_update", 1)


def synchronize(gpu):
    gpu.cuda.neutracer_standin_set_sync_ms(20)
    gpu.check(gpu.cuda.cuStreamSynchronize(None), "cuStreamSynchronize")


def train_step(gpu, state):
    forward(gpu)
    save_activations(gpu, state.setdefault("activations", []))
    backward(gpu, state)
    optimizer_step(gpu, state)
    synchronize(gpu)


def train(gpu, steps):
    state = {"parameters": load_model(gpu)}
    for _ in range(steps):
        train_step(gpu, state)
    return state


def wait_for(path):
    while not os.path.exists(path):
        time.sleep(0.01)


def main():
    if len(sys.argv) != 5 or int(sys.argv[4]) <= 0:
        sys.exit(f"usage: {sys.argv[0]} LIBCUDA GO_FILE EXIT_FILE STEPS")
    gpu = Driver(sys.argv[1])
    print(f"ready {os.getpid()}", flush=True)
    wait_for(sys.argv[2])
    state = train(gpu, int(sys.argv[4]))
    print("done", flush=True)
    wait_for(sys.argv[3])
    return 0 if state else 1


if __name__ == "__main__":
    sys.exit(main())
