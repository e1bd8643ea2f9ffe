#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""GPU workloads with exact ground truth for validating neutracerd.

Usage: workloads.py WORKLOAD --sync-dir DIR --truth FILE [--trace-dir DIR] [--timeout S]

WORKLOAD is one of: torch_ops, cublas, copies, triton, nvcc_static.

Protocol (driven by orchestrate.py):
  1. The workload loads the CUDA driver (libcuda is then mapped, so neutracerd can find it) but does
     no measured work, then prints `READY <pid>` and waits for DIR/go.
  2. It may print `CHECKPOINT <name>` and wait for DIR/continue_<name> (the runner scrapes then).
  3. It writes its ground truth JSON to FILE, prints `DONE` and waits for DIR/exit.

By default the CUDA context is created only AFTER `go`, so every kernel name lookup
(cuModuleGetFunction / cuLibraryGetKernel), allocation and launch happens after the daemon has
attached. Set NT_CTX_BEFORE_READY=1 to create the context before READY instead.

Ground truth file (read by compare.py):
  {"workload", "pid", "checkpoints": [names in order], "info": {...},
   "kernel_checks": [{"desc", "from", "to", "mode", "raw_counts" | "labels", "full_names"?}],
   "metric_checks": [{"desc", "metric", "labels", "from", "to", "expected", "mode"}]}
`from`/`to` name scrapes: null = nothing (all counters zero), "done" = the final scrape.
`mode`: "exact" (must be equal), "at_least" (daemon >= truth), "info" (shown, never fails).
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20


# ------------------------------------------------------------------------------------------------
# Protocol helpers

def die(message, code=2):
    print(f"workloads.py: error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def wait_file(path, timeout, what):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            die(f"timed out after {timeout:.0f}s waiting for the {what} file {path}", 3)
        time.sleep(0.02)


def libcuda_mapped():
    try:
        with open("/proc/self/maps", "r") as f:
            return any("libcuda.so" in line for line in f)
    except OSError:
        return False


def ctx_before_ready():
    return os.environ.get("NT_CTX_BEFORE_READY", "0") == "1"


class Protocol:
    def __init__(self, args):
        self.args = args
        self.checkpoints = []

    def ready(self):
        print(f"READY {os.getpid()}", flush=True)
        wait_file(os.path.join(self.args.sync_dir, "go"), self.args.timeout, "go")

    def checkpoint(self, name):
        self.checkpoints.append(name)
        print(f"CHECKPOINT {name}", flush=True)
        wait_file(os.path.join(self.args.sync_dir, f"continue_{name}"), self.args.timeout,
                  f"continue_{name}")

    def finish(self, truth):
        truth.setdefault("pid", os.getpid())
        truth.setdefault("checkpoints", list(self.checkpoints))
        tmp = self.args.truth + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(truth, f, indent=2, sort_keys=True)
        os.replace(tmp, self.args.truth)
        print("DONE", flush=True)
        wait_file(os.path.join(self.args.sync_dir, "exit"), self.args.timeout, "exit")


def metric_check(desc, metric, labels, expected, mode="exact", frm=None, to="done"):
    return {"desc": desc, "metric": metric, "labels": labels, "expected": int(expected),
            "mode": mode, "from": frm, "to": to}


# ------------------------------------------------------------------------------------------------
# PyTorch helpers

def torch_start(proto, info):
    """Import torch and load the driver without allocating or launching; READY; wait for go."""
    try:
        import torch
    except ImportError as exc:
        die(f"cannot import torch: {exc}")
    if not torch.cuda.is_available():
        die("torch.cuda.is_available() is False")
    torch.cuda.init()
    info["torch_version"] = torch.__version__
    info["torch_cuda_version"] = torch.version.cuda
    info["device_name"] = torch.cuda.get_device_name(0)
    info["ctx_before_ready"] = ctx_before_ready()
    if ctx_before_ready() or not libcuda_mapped():
        # Creates the primary context (cudaDeviceSynchronize) without allocating or launching.
        info["ctx_created_before_ready"] = True
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    if not libcuda_mapped():
        die("libcuda.so is not mapped after CUDA initialisation; neutracerd could not see us")
    info["pytorch_alloc_conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
    info["mem_at_ready"] = torch_mem(torch)
    if info["mem_at_ready"]["reserved"] != 0:
        print(f"workloads.py: warning: {info['mem_at_ready']['reserved']} bytes reserved before "
              "READY; they are invisible to neutracerd", file=sys.stderr, flush=True)
    proto.ready()
    torch.cuda.set_device(0)
    return torch


def torch_mem(torch):
    stats = torch.cuda.memory_stats(0) if torch.cuda.is_initialized() else {}
    return {
        "reserved": int(torch.cuda.memory_reserved(0)),
        "allocated": int(torch.cuda.memory_allocated(0)),
        "segments_allocated": int(stats.get("segment.all.allocated", 0)),
        "segments_freed": int(stats.get("segment.all.freed", 0)),
        "reserved_bytes_allocated": int(stats.get("reserved_bytes.all.allocated", 0)),
        "reserved_bytes_freed": int(stats.get("reserved_bytes.all.freed", 0)),
    }


SYNC_ACTIVITY_NAMES = {"Stream Sync", "Event Sync", "Context Sync", "Device Sync",
                       "Stream Wait Event", "Wait Event", "Synchronize"}


def profile_phase(torch, fn, trace_path):
    """Run fn under torch.profiler (CPU + CUDA); return kernel counts by raw (demangled) name.

    Primary source: the Chrome trace, where GPU kernels have cat == "kernel" (memcpy, memset and
    sync activities have other categories). Cross-check: prof.events() with device_type CUDA,
    excluding Memcpy/Memset/sync activities.
    """
    try:
        from torch.autograd import DeviceType
    except ImportError:
        from torch._C._autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    event_counts = collections.Counter()
    try:
        for e in prof.events():
            if e.device_type != DeviceType.CUDA:
                continue
            if e.name.startswith(("Memcpy", "Memset")) or e.name in SYNC_ACTIVITY_NAMES:
                continue
            event_counts[e.name] += 1
    except Exception as exc:  # cross-check only
        print(f"workloads.py: warning: prof.events() failed: {exc}", file=sys.stderr, flush=True)
    trace_counts, trace_other = collections.Counter(), collections.Counter()
    try:
        prof.export_chrome_trace(trace_path)
        with open(trace_path, "r", encoding="utf-8") as f:
            trace = json.load(f)
        events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
        for e in events:
            if not isinstance(e, dict) or e.get("ph") != "X":
                continue
            cat = str(e.get("cat", "")).lower()
            if cat == "kernel":
                trace_counts[e["name"]] += 1
            elif cat.startswith("gpu_"):
                trace_other[cat] += 1
    except Exception as exc:
        print(f"workloads.py: warning: Chrome trace unusable ({exc}); using prof.events()",
              file=sys.stderr, flush=True)
        trace_counts = collections.Counter(event_counts)
    return dict(trace_counts), dict(event_counts), dict(trace_other)


def torch_profiled_workload(args, name, setup, step, iterations):
    """Common flow for the profiler-checked PyTorch workloads.

    go -> setup (inputs) -> CHECKPOINT setup -> phase A: `iterations` steps without profiler
    -> CHECKPOINT a -> phase B: the same steps under torch.profiler -> DONE.
    Exact check: daemon launches a->done == profiler kernel counts of phase B.
    Info check: daemon launches setup->a (unprofiled) vs profiler counts of phase B.
    """
    proto = Protocol(args)
    info = {}
    torch = torch_start(proto, info)
    with torch.inference_mode():
        state = setup(torch)
        torch.cuda.synchronize()
        info["mem_after_setup"] = torch_mem(torch)
        proto.checkpoint("setup")

        for _ in range(iterations):
            step(state)
        torch.cuda.synchronize()
        info["mem_after_a"] = torch_mem(torch)
        proto.checkpoint("a")

        def phase_b():
            for _ in range(iterations):
                step(state)

        trace_path = os.path.join(args.trace_dir, f"{name}.profile_trace.json")
        trace_counts, event_counts, other = profile_phase(torch, phase_b, trace_path)
        torch.cuda.synchronize()
    mem_ready, mem_done = info["mem_at_ready"], torch_mem(torch)
    info["mem_at_done"] = mem_done
    info["profiler_trace_kernels"] = sum(trace_counts.values())
    info["profiler_events_kernels"] = sum(event_counts.values())
    info["profiler_trace_vs_events_agree"] = trace_counts == event_counts
    info["profiler_other_gpu_activities"] = other
    info["iterations"] = iterations
    if not trace_counts:
        die("the profiler recorded no CUDA kernels (is CUPTI working?)")

    # Memory: libraries (cuBLAS/cuDNN handles, CUPTI) may cudaMalloc outside the caching
    # allocator, so the daemon may see more than PyTorch reserved: "at_least".
    def mem_delta(key):
        return mem_done[key] - mem_ready[key]

    truth = {
        "workload": name,
        "info": info,
        "kernel_checks": [
            {"desc": "phase B under profiler (a->done)", "from": "a", "to": "done", "mode": "exact",
             "raw_counts": trace_counts},
            {"desc": "phase A without profiler (setup->a) vs profiler counts of phase B",
             "from": "setup", "to": "a", "mode": "info", "raw_counts": trace_counts},
        ],
        "metric_checks": [
            metric_check("device bytes in use vs torch reserved delta",
                         "neutracer_cuda_memory_used_bytes", {"kind": "device"},
                         mem_delta("reserved"), "at_least"),
            metric_check("device allocations vs torch segment allocs",
                         "neutracer_cuda_memory_allocations_total", {"kind": "device"},
                         mem_delta("segments_allocated"), "at_least"),
            metric_check("device allocated bytes vs torch reserved_bytes.allocated",
                         "neutracer_cuda_memory_allocated_bytes_total", {"kind": "device"},
                         mem_delta("reserved_bytes_allocated"), "at_least"),
            metric_check("device frees vs torch segment frees",
                         "neutracer_cuda_memory_frees_total", {"kind": "device"},
                         mem_delta("segments_freed"), "info"),
            metric_check("device bytes in use at checkpoint a vs torch reserved",
                         "neutracer_cuda_memory_used_bytes", {"kind": "device"},
                         info["mem_after_a"]["reserved"] - mem_ready["reserved"], "at_least",
                         to="a"),
        ],
    }
    proto.finish(truth)


def run_torch_ops(args):
    n = args.iterations or 50

    def setup(torch):
        import torch.nn.functional as F
        g = torch.Generator(device="cuda").manual_seed(1234)
        s = {
            "F": F,
            "a": torch.randn(512, 512, device="cuda", generator=g),
            "b": torch.randn(512, 512, device="cuda", generator=g),
            "x": torch.randn(8, 16, 32, 32, device="cuda", generator=g),
            "w": torch.randn(32, 16, 3, 3, device="cuda", generator=g),
            "s": torch.randn(64, 1024, device="cuda", generator=g),
            "ln_w": torch.ones(1024, device="cuda"),
            "ln_b": torch.zeros(1024, device="cuda"),
            "c": torch.randn(64, 4096, device="cuda", generator=g),
        }
        s["torch"] = torch
        return s

    def step(s):
        torch, F = s["torch"], s["F"]
        torch.matmul(s["a"], s["b"])
        F.conv2d(s["x"], s["w"], padding=1)
        torch.softmax(s["s"], dim=-1)
        F.layer_norm(s["s"], (1024,), s["ln_w"], s["ln_b"])
        torch.cumsum(s["c"], dim=1)
        torch.topk(s["c"], k=16, dim=1)

    torch_profiled_workload(args, "torch_ops", setup, step, n)


def run_cublas(args):
    n = args.iterations or 100

    def setup(torch):
        torch.backends.cuda.matmul.allow_tf32 = False
        g = torch.Generator(device="cuda").manual_seed(99)
        return {"torch": torch,
                "a": torch.randn(1024, 1024, device="cuda", dtype=torch.float32, generator=g),
                "b": torch.randn(1024, 1024, device="cuda", dtype=torch.float32, generator=g)}

    def step(s):
        s["torch"].mm(s["a"], s["b"])

    torch_profiled_workload(args, "cublas", setup, step, n)


def run_copies(args):
    """Host<->device copies; no kernels at all. Each direction/variant is its own phase."""
    proto = Protocol(args)
    info = {}
    torch = torch_start(proto, info)
    iters = args.iterations or 100
    numel = MiB  # float32 -> 4 MiB per copy (a power of two, so pinned blocks are not rounded)
    nbytes = numel * 4
    info["bytes_per_copy"] = nbytes
    info["iterations"] = iters

    pageable = torch.ones(numel, dtype=torch.float32)             # CPU only, no CUDA call
    pinned_src = torch.ones(numel, dtype=torch.float32).pin_memory()  # cudaHostAlloc
    pinned_dst = torch.empty(numel, dtype=torch.float32, pin_memory=True)
    torch.cuda.synchronize()
    info["pinned"] = [bool(pinned_src.is_pinned()), bool(pinned_dst.is_pinned())]
    info["mem_after_setup"] = torch_mem(torch)
    proto.checkpoint("setup")

    g = None
    for _ in range(iters):
        g = pageable.to("cuda")                  # pageable H2D: cudaMemcpyAsync + sync
    torch.cuda.synchronize()
    proto.checkpoint("pageable_h2d")

    for _ in range(iters):
        g.cpu()                                  # pageable D2H
    torch.cuda.synchronize()
    proto.checkpoint("pageable_d2h")

    h = None
    for _ in range(iters):
        h = pinned_src.to("cuda", non_blocking=True)   # pinned H2D, async
    torch.cuda.synchronize()
    proto.checkpoint("pinned_h2d")

    for _ in range(iters):
        pinned_dst.copy_(g, non_blocking=True)          # pinned D2H, async
    torch.cuda.synchronize()
    del h

    mem_ready, mem_done = info["mem_at_ready"], torch_mem(torch)
    info["mem_at_done"] = mem_done

    def d(key):
        return mem_done[key] - mem_ready[key]

    M = "neutracer_cuda_memcpy_bytes_total"
    C = "neutracer_cuda_memcpy_calls_total"
    checks = []
    for phase, frm, to, direction in (("pageable H2D", "setup", "pageable_h2d", "h2d"),
                                      ("pageable D2H", "pageable_h2d", "pageable_d2h", "d2h"),
                                      ("pinned H2D", "pageable_d2h", "pinned_h2d", "h2d"),
                                      ("pinned D2H", "pinned_h2d", "done", "d2h")):
        checks.append(metric_check(f"{phase}: {direction} bytes", M, {"direction": direction},
                                   iters * nbytes, "exact", frm, to))
        checks.append(metric_check(f"{phase}: {direction} calls", C, {"direction": direction},
                                   iters, "exact", frm, to))
        checks.append(metric_check(f"{phase}: bytes, all directions", M, {}, iters * nbytes,
                                   "exact", frm, to))
    checks += [
        metric_check("whole run: h2d bytes", M, {"direction": "h2d"}, 2 * iters * nbytes),
        metric_check("whole run: d2h bytes", M, {"direction": "d2h"}, 2 * iters * nbytes),
        metric_check("whole run: 'default' direction bytes", M, {"direction": "default"}, 0),
        metric_check("whole run: kernel launches", "neutracer_cuda_kernel_launches_total", {}, 0),
        metric_check("device bytes in use vs torch reserved delta",
                     "neutracer_cuda_memory_used_bytes", {"kind": "device"}, d("reserved")),
        metric_check("device allocations vs torch segment allocs",
                     "neutracer_cuda_memory_allocations_total", {"kind": "device"},
                     d("segments_allocated")),
        metric_check("device allocated bytes vs torch reserved_bytes.allocated",
                     "neutracer_cuda_memory_allocated_bytes_total", {"kind": "device"},
                     d("reserved_bytes_allocated")),
        metric_check("device frees vs torch segment frees",
                     "neutracer_cuda_memory_frees_total", {"kind": "device"}, d("segments_freed")),
        # PyTorch's pinned allocator rounds to powers of two (4 MiB stays 4 MiB); it may use
        # cudaHostRegister instead in some configurations, hence informational.
        metric_check("host pinned bytes in use (2 pinned 4 MiB tensors)",
                     "neutracer_cuda_memory_used_bytes", {"kind": "host_pinned"}, 2 * nbytes,
                     "info"),
    ]
    proto.finish({"workload": "copies", "info": info, "kernel_checks": [],
                  "metric_checks": checks})


def run_triton(args):
    proto = Protocol(args)
    info = {}
    sys.path.insert(0, HERE)
    try:
        import triton
        from triton_add import add_kernel
    except ImportError as exc:
        die(f"cannot import triton: {exc}")
    info["triton_version"] = triton.__version__
    torch = torch_start(proto, info)
    launches = args.iterations or 200
    n = 1 << 20
    x = torch.empty(n, device="cuda")   # torch.empty launches no kernel
    y = torch.empty(n, device="cuda")
    out = torch.empty(n, device="cuda")
    grid = (triton.cdiv(n, 1024),)
    for _ in range(launches):
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    torch.cuda.synchronize()
    mem_ready, mem_done = info["mem_at_ready"], torch_mem(torch)
    info["mem_at_done"] = mem_done
    proto.finish({
        "workload": "triton",
        "info": info,
        "kernel_checks": [{"desc": "Triton launches (whole run)", "from": None, "to": "done",
                           "mode": "exact", "labels": {"add_kernel": launches}}],
        "metric_checks": [
            metric_check("device bytes in use vs torch reserved delta",
                         "neutracer_cuda_memory_used_bytes", {"kind": "device"},
                         mem_done["reserved"] - mem_ready["reserved"]),
            metric_check("device allocations vs torch segment allocs",
                         "neutracer_cuda_memory_allocations_total", {"kind": "device"},
                         mem_done["segments_allocated"] - mem_ready["segments_allocated"]),
        ],
    })


# ------------------------------------------------------------------------------------------------
# nvcc, statically linked cudart

CU_SOURCE = r'''
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <time.h>
#include <unistd.h>

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      fprintf(stderr, "nt_static_app: %s failed at line %d: %s\n", #x, __LINE__,              \
              cudaGetErrorString(e_));                                                        \
      exit(2);                                                                                \
    }                                                                                         \
  } while (0)

extern "C" __global__ void vectorAdd(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

namespace nt {
template <typename T, int N>
__global__ void scale_kernel(T *data, T factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    for (int k = 0; k < N; ++k) data[i] *= factor;
}
} // namespace nt

static double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void wait_file(const std::string &path, double timeout) {
  const double start = now_s();
  while (access(path.c_str(), F_OK) != 0) {
    if (now_s() - start > timeout) {
      fprintf(stderr, "nt_static_app: timed out waiting for %s\n", path.c_str());
      exit(3);
    }
    usleep(20000);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s SYNC_DIR TRUTH_JSON [TIMEOUT_S]\n", argv[0]);
    return 1;
  }
  const std::string sync_dir = argv[1], truth_path = argv[2];
  const double timeout = argc > 3 ? atof(argv[3]) : 300.0;
  const char *ctx_env = getenv("NT_CTX_BEFORE_READY");
  const bool ctx_before = ctx_env != nullptr && strcmp(ctx_env, "1") == 0;

  int devices = 0;
  CHECK(cudaGetDeviceCount(&devices)); // loads libcuda and runs cuInit; no context yet
  if (devices < 1) {
    fprintf(stderr, "nt_static_app: no CUDA device\n");
    return 2;
  }
  if (ctx_before) {
    CHECK(cudaSetDevice(0));
    CHECK(cudaDeviceSynchronize());
  }
  printf("READY %d\n", (int)getpid());
  fflush(stdout);
  wait_file(sync_dir + "/go", timeout);

  CHECK(cudaSetDevice(0));
  const size_t MiB = 1u << 20;
  const int kAllocs = 10;
  void *d[kAllocs];
  size_t sizes[kAllocs];
  unsigned long long allocated = 0, freed = 0;
  for (int i = 0; i < kAllocs; ++i) {
    sizes[i] = (size_t)(i + 1) * MiB;
    CHECK(cudaMalloc(&d[i], sizes[i]));
    allocated += sizes[i];
  }
  const unsigned long long peak = allocated;
  const int to_free[4] = {1, 3, 5, 7};
  for (int k = 0; k < 4; ++k) {
    CHECK(cudaFree(d[to_free[k]]));
    freed += sizes[to_free[k]];
    d[to_free[k]] = nullptr;
  }

  std::vector<char> host_src(MiB, 1), host_dst(256 * 1024, 0);
  const int kH2D = 20, kD2H = 10;
  for (int i = 0; i < kH2D; ++i)
    CHECK(cudaMemcpy(d[0], host_src.data(), MiB, cudaMemcpyHostToDevice));
  for (int i = 0; i < kD2H; ++i)
    CHECK(cudaMemcpy(host_dst.data(), d[2], 256 * 1024, cudaMemcpyDeviceToHost));

  const int n = (int)(MiB / sizeof(float));
  const int threads = 256, blocks = (n + threads - 1) / threads;
  const int kA = 1000, kB = 500;
  for (int i = 0; i < kA; ++i)
    vectorAdd<<<blocks, threads>>>((const float *)d[0], (const float *)d[2], (float *)d[4], n);
  CHECK(cudaGetLastError());
  for (int i = 0; i < kB; ++i)
    nt::scale_kernel<float, 4><<<blocks, threads>>>((float *)d[8], 2.0f, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());

  const std::string tmp = truth_path + ".tmp";
  FILE *f = fopen(tmp.c_str(), "w");
  if (!f) {
    perror("nt_static_app: cannot write truth file");
    return 2;
  }
  const char *M = "neutracer_cuda_memory";
  fprintf(f, "{\n \"workload\": \"nvcc_static\",\n \"pid\": %d,\n \"checkpoints\": [],\n",
          (int)getpid());
  fprintf(f, " \"info\": {\"ctx_before_ready\": %s},\n", ctx_before ? "true" : "false");
  fprintf(f, " \"kernel_checks\": [{\"desc\": \"kernels (whole run)\", \"from\": null, "
             "\"to\": \"done\", \"mode\": \"exact\", \"labels\": {\"vectorAdd\": %d, "
             "\"scale_kernel\": %d}, \"full_names\": {\"vectorAdd\": \"vectorAdd\", "
             "\"scale_kernel\": \"void nt::scale_kernel<float, 4>(float*, float, int)\"}}],\n",
          kA, kB);
  fprintf(f, " \"metric_checks\": [\n");
#define ROW(desc, metric, labels, value, last)                                                 \
  fprintf(f,                                                                                  \
          "  {\"desc\": \"%s\", \"metric\": \"%s\", \"labels\": %s, \"expected\": %llu, "     \
          "\"mode\": \"exact\", \"from\": null, \"to\": \"done\"}%s\n",                       \
          desc, metric, labels, (unsigned long long)(value), last ? "" : ",")
  std::string used = std::string(M) + "_used_bytes", peak_m = std::string(M) + "_peak_bytes",
              allocs = std::string(M) + "_allocations_total", frees = std::string(M) + "_frees_total",
              ab = std::string(M) + "_allocated_bytes_total", fb = std::string(M) + "_freed_bytes_total";
  const char *dev = "{\"kind\": \"device\"}";
  ROW("device bytes in use", used.c_str(), dev, allocated - freed, 0);
  ROW("device peak bytes", peak_m.c_str(), dev, peak, 0);
  ROW("device allocations", allocs.c_str(), dev, kAllocs, 0);
  ROW("device frees", frees.c_str(), dev, 4, 0);
  ROW("device allocated bytes", ab.c_str(), dev, allocated, 0);
  ROW("device freed bytes", fb.c_str(), dev, freed, 0);
  ROW("h2d bytes", "neutracer_cuda_memcpy_bytes_total", "{\"direction\": \"h2d\"}",
      (unsigned long long)kH2D * MiB, 0);
  ROW("h2d calls", "neutracer_cuda_memcpy_calls_total", "{\"direction\": \"h2d\"}", kH2D, 0);
  ROW("d2h bytes", "neutracer_cuda_memcpy_bytes_total", "{\"direction\": \"d2h\"}",
      (unsigned long long)kD2H * 256 * 1024, 0);
  ROW("d2h calls", "neutracer_cuda_memcpy_calls_total", "{\"direction\": \"d2h\"}", kD2H, 0);
  ROW("memcpy bytes, all directions", "neutracer_cuda_memcpy_bytes_total", "{}",
      (unsigned long long)kH2D * MiB + (unsigned long long)kD2H * 256 * 1024, 1);
  fprintf(f, " ]\n}\n");
  fclose(f);
  if (rename(tmp.c_str(), truth_path.c_str()) != 0) {
    perror("nt_static_app: rename truth file");
    return 2;
  }
  printf("DONE\n");
  fflush(stdout);
  wait_file(sync_dir + "/exit", timeout);
  return 0;
}
'''


def find_nvcc():
    for candidate in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if candidate and os.path.exists(candidate):
            return candidate
    die("nvcc not found (PATH or /usr/local/cuda/bin)")


def run_nvcc_static(args):
    nvcc = find_nvcc()
    work = tempfile.mkdtemp(prefix="nt_nvcc_")
    src = os.path.join(work, "nt_static_app.cu")
    binary = os.path.join(work, "nt_static_app")
    with open(src, "w") as f:
        f.write(CU_SOURCE)
    errors = []
    for arch in (os.environ.get("NT_NVCC_ARCH"), "-arch=native", "-arch=sm_90"):
        if not arch:
            continue
        cmd = [nvcc, "-O2", "-cudart", "static", arch, "-o", binary, src]
        print("workloads.py: " + " ".join(cmd), file=sys.stderr, flush=True)
        result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode == 0:
            break
        errors.append(f"{' '.join(cmd)}:\n{result.stdout}")
    else:
        die("nvcc failed:\n" + "\n".join(errors))
    if args.keep_binary:
        shutil.copy2(binary, os.path.join(args.trace_dir, "nt_static_app"))
    # exec: same pid, the C++ program speaks the protocol itself.
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(binary, [binary, args.sync_dir, args.truth, str(args.timeout)])


WORKLOADS = {
    "torch_ops": run_torch_ops,
    "cublas": run_cublas,
    "copies": run_copies,
    "triton": run_triton,
    "nvcc_static": run_nvcc_static,
}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--sync-dir", required=True, help="directory for go/continue_*/exit files")
    parser.add_argument("--truth", required=True, help="where to write the ground truth JSON")
    parser.add_argument("--trace-dir", default=None, help="where to put profiler traces")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds to wait for each runner file before giving up")
    parser.add_argument("--iterations", type=int, default=0,
                        help="override the workload's iteration count (0 = default)")
    parser.add_argument("--keep-binary", action="store_true",
                        help="nvcc_static: copy the compiled program to --trace-dir")
    args = parser.parse_args()
    args.truth = os.path.abspath(args.truth)
    args.trace_dir = os.path.abspath(args.trace_dir or os.path.dirname(args.truth))
    os.makedirs(args.trace_dir, exist_ok=True)
    if not os.path.isdir(args.sync_dir):
        die(f"--sync-dir {args.sync_dir} is not a directory")
    WORKLOADS[args.workload](args)


if __name__ == "__main__":
    main()
