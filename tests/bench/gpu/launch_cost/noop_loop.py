#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Timed loops served to an orchestrator over stdin/stdout (the protocol of noop_loop.c).

What it measures: the time per call of an empty library function through ctypes (with and
without a uprobe on it, put on from outside), in a plain Python process or inside a CUDA
PyTorch process, and the time per iteration of the PyTorch workloads of
tests/bench/gpu/torch_workloads.py (eager `x = x * 1.0001 + 0.1`, the small CNN training step),
so that conditions (no tool, a bare uprobe, neutracerd) can be switched around one long-lived
process and compared within it.

    noop_loop.py [--noop-lib libntnoop.so] [--torch] [--idle-threads K]
                 [--workloads eager,cnn] [--eager-warmup N] [--cnn-warmup N]
                 [--standin-lib libcuda.so.1]

Set-up (imports, CUDA context, models, warm-up) happens first; then it prints `READY <pid>` and
serves one command per stdin line, answering one line each:
    call FUNC N     N ctypes calls of FUNC(None) from --noop-lib
                    -> RESULT call FUNC N SECONDS
    eagerx FUNC K N N eager iterations, each followed by K ctypes calls of FUNC(None): with
                    FUNC probed, minus the same with nt_noop_twin, the cost of K traps taken
                    inside the PyTorch loop at a site outside libcuda
                    -> RESULT eagerx FUNC N SECONDS
    pyworkx FUNC N  N times: a few microseconds of plain interpreter work, then FUNC(None)
                    -> RESULT pyworkx FUNC N SECONDS
    eager N | cnn N N iterations of the workload between two device synchronisations, the
                    garbage collector off -> RESULT eager N SECONDS
    quit
--torch alone: `import torch; torch.cuda.init(); torch.ones(1, device='cuda')` (a large CUDA
process). --idle-threads K adds K threads that only wait. --standin-lib replaces the PyTorch
workloads by ctypes calls of a stand-in driver's cuLaunchKernel (2 per eager iteration, 218
per CNN step), to test the orchestration on a machine without a GPU.
"""
import argparse
import ctypes
import gc
import glob
import importlib.util
import os
import sys
import threading
import time


def load_torch_workloads():
    """tests/bench/gpu/torch_workloads.py of this checkout, wherever the tree put it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = sorted(glob.glob(os.path.join(root, "tests", "**", "torch_workloads.py"),
                             recursive=True))
    if not found:
        sys.exit("noop_loop.py: tests/**/torch_workloads.py not found")
    spec = importlib.util.spec_from_file_location("torch_workloads", found[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def standin_workloads(path):
    """Stand-in steps: launches through a stand-in libcuda.so.1 (no GPU, no torch)."""
    cuda = ctypes.CDLL(path)
    cuda.cuInit(0)
    launch = cuda.cuLaunchKernel
    launch.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3

    def eager():
        launch(None, 1, 1, 1, 1, 1, 1, 0, None, None, None)
        launch(None, 1, 1, 1, 1, 1, 1, 0, None, None, None)

    def cnn():
        for _ in range(218):
            launch(None, 1, 1, 1, 1, 1, 1, 0, None, None, None)

    return {"eager": eager, "cnn": cnn}, (lambda: None)


def timed(sync, step, n):
    gc.collect()
    gc.disable()
    try:
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        return time.perf_counter() - t0
    finally:
        gc.enable()


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--noop-lib")
    p.add_argument("--torch", action="store_true")
    p.add_argument("--idle-threads", type=int, default=0)
    p.add_argument("--workloads", default="")
    p.add_argument("--eager-warmup", type=int, default=1000)
    p.add_argument("--cnn-warmup", type=int, default=20)
    p.add_argument("--standin-lib")
    args = p.parse_args()

    lib = ctypes.CDLL(os.path.abspath(args.noop_lib)) if args.noop_lib else None
    steps, sync = {}, (lambda: None)
    if args.torch:
        import torch
        torch.cuda.init()
        keep = torch.ones(1, device="cuda")  # noqa: F841  (context and one allocation)
        print(f"INFO torch={torch.__version__} cuda={torch.version.cuda} "
              f"cudnn={torch.backends.cudnn.version()} device={torch.cuda.get_device_name(0)!r}",
              flush=True)
        sync = torch.cuda.synchronize
        names = [w for w in args.workloads.split(",") if w]
        if names:
            tw = load_torch_workloads()
            torch.manual_seed(0)
            for name in names:
                step, _check = tw.BUILDERS[name](torch, "cuda")
                steps[name] = step
        sync()
    elif args.standin_lib:
        steps, sync = standin_workloads(args.standin_lib)
    warmups = {"eager": args.eager_warmup, "cnn": args.cnn_warmup}
    for name, step in steps.items():
        for _ in range(warmups.get(name, 0)):
            step()
    sync()

    stop = threading.Event()
    idle = [threading.Thread(target=stop.wait, daemon=True) for _ in range(args.idle_threads)]
    for t in idle:
        t.start()

    print(f"READY {os.getpid()}", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        try:
            if words[0] == "call" and lib is not None and len(words) == 3:
                fn = getattr(lib, words[1])
                fn.argtypes = [ctypes.c_void_p]
                fn.restype = None
                n = int(words[2])
                gc.disable()
                t0 = time.perf_counter()
                for _ in range(n):
                    fn(None)
                seconds = time.perf_counter() - t0
                gc.enable()
                print(f"RESULT call {words[1]} {n} {seconds:.9f}", flush=True)
            elif words[0] == "eagerx" and lib is not None and "eager" in steps \
                    and len(words) == 4:
                fn = getattr(lib, words[1])
                fn.argtypes = [ctypes.c_void_p]
                fn.restype = None
                k, n = int(words[2]), int(words[3])
                step = steps["eager"]

                def step_and_calls():
                    step()
                    for _ in range(k):
                        fn(None)
                seconds = timed(sync, step_and_calls, n)
                print(f"RESULT eagerx {words[1]} {n} {seconds:.9f}", flush=True)
            elif words[0] == "pyworkx" and lib is not None and len(words) == 3:
                fn = getattr(lib, words[1])
                fn.argtypes = [ctypes.c_void_p]
                fn.restype = None
                n = int(words[2])

                def work_and_call():
                    d = {i: i * i for i in range(48)}
                    sum(v for v in d.values() if v & 1)
                    fn(None)
                seconds = timed(lambda: None, work_and_call, n)
                print(f"RESULT pyworkx {words[1]} {n} {seconds:.9f}", flush=True)
            elif words[0] in steps and len(words) == 2:
                n = int(words[1])
                seconds = timed(sync, steps[words[0]], n)
                print(f"RESULT {words[0]} {words[0]} {n} {seconds:.9f}", flush=True)
            else:
                print(f"ERROR bad command: {line.strip()}", flush=True)
        except Exception as exc:  # keep serving; the orchestrator logs it
            print(f"ERROR {type(exc).__name__}: {exc}", flush=True)
    stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
