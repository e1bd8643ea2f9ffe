#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Validates neutracer_process_gpu_busy_seconds_total on a GPU against CUDA-event ground truth.

    tests/gpu/gpu_time.py NEUTRACERD_BINARY OUTDIR [--cycle 4] [--seconds 40]

Two PyTorch processes take turns on GPU 0: in each --cycle seconds, the first is busy for the
first half (bf16 matmuls), the second for the following quarter, and both idle for the rest. Each
measures the time its kernels ran with CUDA events. The daemon (1 s scans) must report each
process's busy seconds per second, over the steady middle of the run, within 0.05 of that truth.
NVML charges each of its driver sampling periods (0.2 s on an H100) whole to one process, so
with a short --cycle (1 s) the split between the two is coarse while their sum holds: that run
is informational (--no-check).

Writes OUTDIR/gpu_time.md (the table), daemon.log and scrapes.txt. Exit status 0 when every
row is within tolerance, 1 otherwise, 2 on setup errors. Standard library only (the workloads
need PyTorch).
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nt_common import fetch, parse_prometheus, select  # noqa: E402

PORT = int(os.environ.get("NT_PORT", "19557"))
URL = f"http://127.0.0.1:{PORT}"
TOLERANCE = 0.05  # busy seconds per second

WORKLOAD = r"""
import os, sys, time, torch
duty, offset, seconds, cycle = (float(a) for a in sys.argv[1:5])
a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
for _ in range(5):
    a @ a
torch.cuda.synchronize()
print("READY", os.getpid(), flush=True)
busy_ms, start = 0.0, time.time()
while time.time() - start < seconds:
    begin = time.time() // cycle * cycle
    while time.time() < begin + offset:
        time.sleep(0.001)
    first, last = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    first.record()
    while time.time() < begin + offset + duty:
        for _ in range(8):
            a @ a
        torch.cuda.synchronize()
    last.record()
    torch.cuda.synchronize()
    busy_ms += first.elapsed_time(last)
    while time.time() < begin + cycle:
        time.sleep(0.001)
print("BUSY", busy_ms / 1000 / (time.time() - start), flush=True)
"""


def busy_by_pid(text):
    samples = parse_prometheus(text)
    return {labels["pid"]: value
            for labels, value in select(samples, "neutracer_process_gpu_busy_seconds_total", gpu="0")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("outdir")
    parser.add_argument("--cycle", type=float, default=4.0)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--no-check", action="store_true", help="report only")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("gpu_time.py: must run as root (the daemon attaches uprobes)", file=sys.stderr)
        return 2
    os.makedirs(args.outdir, exist_ok=True)
    env = dict(os.environ)
    libdir = os.path.join(os.path.dirname(os.path.abspath(args.binary)), "lib")
    if os.path.isdir(libdir):
        env["LD_LIBRARY_PATH"] = libdir
    config = os.path.join(args.outdir, "daemon.yaml")
    with open(config, "w") as f:
        f.write("cuda: {launch_counting: exact}\n")
    with open(os.path.join(args.outdir, "daemon.log"), "w") as log:
        daemon = subprocess.Popen([args.binary, "--config", config, "--listen", f"127.0.0.1:{PORT}",
                                   "--scan-interval", "1s", "--log-level", "debug"],
                                  env=env, stdout=log, stderr=subprocess.STDOUT)
    workloads = []
    try:
        for _ in range(60):
            try:
                fetch(URL + "/metrics")
                break
            except RuntimeError:
                time.sleep(0.5)
        else:
            print("gpu_time.py: the daemon did not start; see daemon.log", file=sys.stderr)
            return 2
        for duty, offset in ((0.5, 0.0), (0.25, 0.5)):
            workloads.append(subprocess.Popen(
                [sys.executable, "-c", WORKLOAD, str(duty * args.cycle), str(offset * args.cycle),
                 str(args.seconds), str(args.cycle)], stdout=subprocess.PIPE, text=True))
        pids = [w.stdout.readline().split()[1] for w in workloads]
        # Scrape every second; the rate is taken over whole cycles in the middle of the run.
        scrapes = []
        with open(os.path.join(args.outdir, "scrapes.txt"), "w") as out:
            deadline = time.time() + args.seconds - 1
            while time.time() < deadline:
                text = fetch(URL + "/metrics")
                scrapes.append((time.time(), busy_by_pid(text)))
                out.write(f"{scrapes[-1]!r}\n")
                time.sleep(1)
        truth = [float(w.stdout.read().split()[-1]) for w in workloads]
    finally:
        for w in workloads:
            w.wait(timeout=120)
        daemon.terminate()
        daemon.wait(timeout=120)

    cycles = max(1, int((scrapes[-1][0] - scrapes[0][0] - 6) // args.cycle))
    first = next(i for i, (_, busy) in enumerate(scrapes) if all(p in busy for p in pids)) + 2
    last = min(len(scrapes) - 1, first + round(cycles * args.cycle))
    (t0, b0), (t1, b1) = scrapes[first], scrapes[last]
    rows, ok = [], True
    for pid, want in zip(pids, truth):
        got = (b1[pid] - b0[pid]) / (t1 - t0)
        within = abs(got - want) <= TOLERANCE
        ok &= within or args.no_check
        rows.append((pid, want, got, within))
    lines = [f"cycle {args.cycle:g} s, rate over {t1 - t0:.1f} s", "",
             "| pid | busy s/s (CUDA events) | neutracerd | within 0.05 |", "|---|---|---|---|"]
    lines += [f"| {pid} | {want:.3f} | {got:.3f} | {'yes' if within else 'NO'} |"
              for pid, want, got, within in rows]
    lines.append(f"| sum | {sum(r[1] for r in rows):.3f} | {sum(r[2] for r in rows):.3f} | |")
    report = "\n".join(lines) + "\n"
    print(report)
    with open(os.path.join(args.outdir, "gpu_time.md"), "w") as f:
        f.write(report)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
