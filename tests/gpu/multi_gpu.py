#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Per-GPU attribution on a machine with two or more GPUs (issue 9).

Starts neutracerd, runs a PyTorch workload that puts known work on GPU 0 and GPU 1 of one
process, and checks the daemon's per-`gpu` series against the workload's own figures:

  memory   neutracer_cuda_memory_used_bytes{gpu=d,kind="device"} == torch.cuda.memory_reserved(d)
           (every byte the caching allocator holds came from cudaMalloc on that device)
  launches the increase of neutracer_cuda_kernel_launches_total{gpu=d} over a phase of N_d
           in-place adds on device d, switching device every op, == N_d
  copies   the increase of neutracer_cuda_memcpy_bytes_total{gpu=d} over a phase that copies
           B_d host bytes to device d == B_d
  unknown  no series with gpu="unknown" for the process
  nvml     with libnvidia-ml present: neutracer_gpu_info for each GPU, and NVML's per-process
           memory on each GPU at least our figure (it adds the context's own memory)

Usage (as root): multi_gpu.py NEUTRACERD_BINARY OUTDIR
Writes OUTDIR/results.md and OUTDIR/results.json; exit 0 when every row matches.
Standard library plus torch; no network.
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nt_common import fetch, parse_prometheus, select, value_sum  # noqa: E402

PORT = 19556
URL = f"http://127.0.0.1:{PORT}"

WORKLOAD = r"""
import json, os, sys, time, urllib.request
import torch

go, out = sys.argv[1], sys.argv[2]
assert torch.cuda.device_count() >= 2, "needs two GPUs"
print("READY", os.getpid(), flush=True)
while not os.path.exists(go):
    time.sleep(0.01)

def phase(name):
    torch.cuda.synchronize(0); torch.cuda.synchronize(1)
    print("PHASE", name, flush=True)
    sys.stdin.readline()  # the runner scrapes, then answers

# Memory: 64 MiB on GPU 0, 96 MiB on GPU 1, plus small tensors on both.
a0 = torch.empty(64 << 20, dtype=torch.uint8, device="cuda:0")
a1 = torch.empty(96 << 20, dtype=torch.uint8, device="cuda:1")
x0 = torch.zeros(1024, device="cuda:0")
x1 = torch.zeros(1024, device="cuda:1")
x0.add_(1); x1.add_(1)  # warm: kernels loaded on both devices
host2 = torch.ones(2 << 20, dtype=torch.uint8)
host3 = torch.ones(3 << 20, dtype=torch.uint8)
phase("start")
# Launches: 500 adds on GPU 0 and 1000 on GPU 1, interleaved so the current device changes.
for i in range(1000):
    if i % 2 == 0:
        x0.add_(1)
    x1.add_(1)
phase("launched")
a0[: 2 << 20].copy_(host2)
a1[: 3 << 20].copy_(host3)
a1[: 3 << 20].copy_(host3)
phase("copied")
json.dump({"reserved": [torch.cuda.memory_reserved(0), torch.cuda.memory_reserved(1)],
           "launches": [500, 1000], "h2d_bytes": [2 << 20, 2 * (3 << 20)]}, open(out, "w"))
phase("done")
"""


def scrape():
    return parse_prometheus(fetch(URL + "/metrics"))


def wait_scans(n=2):
    start = value_sum(scrape(), "neutracer_scans_total")
    deadline = time.time() + 15
    while value_sum(scrape(), "neutracer_scans_total") < start + n:
        if time.time() > deadline:
            raise RuntimeError("daemon stopped scanning")
        time.sleep(0.05)


def per_gpu(samples, name, pid, **labels):
    out = {}
    for lab, v in select(samples, name, pid=pid, **labels):
        out[lab.get("gpu", "<none>")] = out.get(lab.get("gpu", "<none>"), 0) + v
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    binary, outdir = os.path.abspath(sys.argv[1]), sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    env = dict(os.environ)
    libdir = os.path.join(os.path.dirname(binary), "lib")
    if os.path.isdir(libdir):
        env["LD_LIBRARY_PATH"] = libdir + ":" + env.get("LD_LIBRARY_PATH", "")
    log = open(os.path.join(outdir, "daemon.log"), "w")
    # Exact launch counts per GPU are compared with the truth: not the adaptive default.
    config = os.path.join(outdir, "daemon.yaml")
    with open(config, "w") as f:
        f.write("cuda: {launch_counting: exact}\n")
    daemon = subprocess.Popen([binary, "--config", config, "--listen", f"127.0.0.1:{PORT}",
                               "--scan-interval", "200ms", "--log-level", "debug"],
                              stdout=log, stderr=subprocess.STDOUT, env=env)
    rows, snapshots = [], {}
    try:
        deadline = time.time() + 30
        while True:
            try:
                fetch(URL + "/healthz")
                break
            except RuntimeError:
                if time.time() > deadline or daemon.poll() is not None:
                    raise RuntimeError("daemon did not become healthy")
                time.sleep(0.2)
        go = os.path.join(outdir, "go")
        truth_path = os.path.join(outdir, "truth.json")
        work = subprocess.Popen([sys.executable, "-c", WORKLOAD, go, truth_path],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTORCH_CUDA_ALLOC_CONF":
                                     "expandable_segments:False"})
        pid = work.stdout.readline().split()[1]
        deadline = time.time() + 30
        while not select(scrape(), "neutracer_cuda_memory_used_bytes", pid=pid):
            if time.time() > deadline:
                raise RuntimeError("daemon never discovered the workload")
            time.sleep(0.1)
        open(go, "w").close()
        for _ in range(4):
            line = work.stdout.readline().split()
            assert line[0] == "PHASE", line
            wait_scans(2)
            snapshots[line[1]] = scrape()
            work.stdin.write("\n")
            work.stdin.flush()
        work.wait(timeout=60)
        truth = json.load(open(truth_path))
        done = snapshots["done"]
        used = per_gpu(done, "neutracer_cuda_memory_used_bytes", pid, kind="device")
        launches = {k: per_gpu(snapshots[k], "neutracer_cuda_kernel_launches_total", pid)
                    for k in ("start", "launched")}
        copies = {k: per_gpu(snapshots[k], "neutracer_cuda_memcpy_bytes_total", pid)
                  for k in ("launched", "copied")}
        for d in (0, 1):
            g = str(d)
            rows.append((f"GPU {d} device memory in use", truth["reserved"][d], used.get(g, 0)))
            rows.append((f"GPU {d} launches in the launch phase", truth["launches"][d],
                         launches["launched"].get(g, 0) - launches["start"].get(g, 0)))
            rows.append((f"GPU {d} copied bytes in the copy phase", truth["h2d_bytes"][d],
                         copies["copied"].get(g, 0) - copies["launched"].get(g, 0)))
        unknown = [n for n, lab, v in done if lab.get("pid") == pid and lab.get("gpu") == "unknown"]
        rows.append(("series with gpu=\"unknown\"", 0, len(unknown)))
        info = select(done, "neutracer_gpu_info")
        nvml_rows = []
        if info:
            nvml_rows.append(("NVML GPUs listed", ">= 2", len(info)))
            for d in (0, 1):
                nvml = value_sum(done, "neutracer_nvml_process_memory_used_bytes", pid=pid,
                                 gpu=str(d))
                nvml_rows.append((f"NVML process memory on GPU {d} >= ours", used.get(str(d), 0),
                                  nvml))
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
    ok = all(want == got for _, want, got in rows) and all(
        (got >= 2) if isinstance(want, str) else got >= want for _, want, got in nvml_rows)
    lines = ["| check | expected | neutracerd |", "|---|---|---|"]
    lines += [f"| {name} | {want} | {got:.0f} |" for name, want, got in rows + nvml_rows]
    if not nvml_rows:
        lines.append("| NVML | libnvidia-ml absent or no device metrics | - |")
    text = "\n".join(lines) + "\n\n" + ("ALL MATCH" if ok else "MISMATCH") + "\n"
    open(os.path.join(outdir, "results.md"), "w").write(text)
    json.dump({"rows": rows, "nvml": nvml_rows,
               "snapshots": {k: [[n, l, v] for n, l, v in s] for k, s in snapshots.items()}},
              open(os.path.join(outdir, "results.json"), "w"))
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
