#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What an open allocator view (docs/allocator-view.md) costs a training step, on a real GPU.

    python3 tests/bench/gpu/allocator_view_cost.py NEUTRACERD_BINARY OUTDIR [--seconds 90]
        [--workload cnn|transformer|leak_list]

One process runs --workload's step (cnn: a small CNN on CIFAR-sized batches, short steps, so
many tensor allocations per second: a worst case for per-allocation probes; transformer: a
four-layer encoder; leak_list: the seeds' leak case) for --seconds under neutracerd (shipped
defaults, but allocator.view_duration = --open-for). The view is asked for through
POST /api/v1/processes/<pid>/allocator at --open-at seconds; it opens at the next scan and
closes by itself. So the same process runs closed, open, closed: with and without in one run.
The step times of each whole second are grouped by phase (a second of margin around each
change); the result is the median step time per phase, the ratio open / closed with a 95 %
bootstrap interval over those seconds, and the tensor allocations per step (from PyTorch's own
counters), which give the cost per probed allocation. Writes
OUTDIR/allocator_view_cost.WORKLOAD.md.
Root; standard library and PyTorch only.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "gpu"))
from nt_common import fetch, parse_prometheus, wait_for  # noqa: E402

PORT = 19561


MiB = 1 << 20


def cnn_step(torch):
    """A CIFAR-sized CNN training step: short steps, many tensor allocations a second."""
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(128, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (128,), device="cuda")

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return step


def transformer_step(torch):
    """tests/gpu/detector_cases.py's transformer: four encoder layers, AdamW, 16 x 256 tokens."""
    nn = torch.nn
    layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048,
                                       batch_first=True)
    model = nn.Sequential(nn.Embedding(8192, 512), nn.TransformerEncoder(layer, num_layers=4),
                          nn.Linear(512, 8192)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    tokens = torch.randint(0, 8192, (16, 256), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(tokens).flatten(0, 1), tokens.flatten()).backward()
        opt.step()
    return step


def leak_list_step(torch):
    """The seeds' leak_list case without its sleep: two 4 MiB tensors kept and one dropped per
    step, on a sawtooth of eight 8 MiB temporaries. The list starts full and is capped at 256
    tensors (1 GiB): the step's shape without the growth, which would open a view by itself."""
    kept = [torch.randn(MiB, device="cuda") for _ in range(256)]  # the list, grown already
    rng = random.Random(11)

    def step():
        kept.append(torch.randn(MiB, device="cuda"))
        kept.append(torch.randn(MiB, device="cuda"))
        kept.pop(rng.randrange(len(kept)))
        if len(kept) > 256:
            kept.pop(0)
        tmp = [torch.empty(2 * MiB, device="cuda") for _ in range(8)]
        sum(t.fill_(1.0).sum() for t in tmp)
    return step


WORKLOADS = {"cnn": cnn_step, "transformer": transformer_step, "leak_list": leak_list_step}


def child(workload, seconds):
    import torch

    step = WORKLOADS[workload](torch)
    for _ in range(20):  # warm-up: cuDNN picks its algorithms, the pool settles
        step()
    torch.cuda.synchronize()
    # The daemon starts now and finds the process at its steady level: growth before it
    # attached is not seen, so no view opens by itself.
    print(f"READY {os.getpid()}", flush=True)
    sys.stdin.readline()
    start = time.time()
    allocs_before = torch.cuda.memory_stats()["allocation.all.allocated"]
    ends, steps = [], 0
    while time.time() - start < seconds:
        step()
        torch.cuda.synchronize()  # a step's time is its whole GPU work
        ends.append(time.time())
        steps += 1
    allocs = torch.cuda.memory_stats()["allocation.all.allocated"] - allocs_before
    print(json.dumps({"start": start, "ends": ends, "allocs_per_step": allocs / max(1, steps)}),
          flush=True)


def healthy():
    try:
        return fetch(f"http://127.0.0.1:{PORT}/healthz").startswith("ok")
    except RuntimeError:
        return False


def post(path):
    request = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", method="POST")
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.status


def bootstrap_ratio(a, b, rounds=2000):
    rng = random.Random(7)
    ratios = sorted(statistics.median(rng.choices(a, k=len(a))) /
                    statistics.median(rng.choices(b, k=len(b))) for _ in range(rounds))
    return ratios[int(0.025 * rounds)], ratios[int(0.975 * rounds)]


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary", nargs="?")
    p.add_argument("outdir", nargs="?")
    p.add_argument("--seconds", type=float, default=90)
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="cnn")
    p.add_argument("--open-at", type=float, default=30)
    p.add_argument("--open-for", type=int, default=30)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.workload, args.seconds)
        return 0
    if not args.binary or not args.outdir:
        p.error("BINARY and OUTDIR are required")
    os.makedirs(args.outdir, exist_ok=True)
    config = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    config.write(f"allocator: {{view_duration: {args.open_for}s}}\n")
    config.close()
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(os.path.abspath(args.binary)), "lib")
    if os.path.isdir(lib):
        env["LD_LIBRARY_PATH"] = lib + ":" + env.get("LD_LIBRARY_PATH", "")
    work = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child",
                             "--workload", args.workload, "--seconds", str(args.seconds)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = work.stdout.readline().split()[1]
    with open(os.path.join(args.outdir, "daemon.log"), "w") as log:
        daemon = subprocess.Popen([args.binary, "--config", config.name, "--listen",
                                   f"127.0.0.1:{PORT}", "--scan-interval", "500ms"],
                                  stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            wait_for(healthy, 30, "the daemon")
            wait_for(lambda: any(l.get("pid") == pid for _, l, _ in parse_prometheus(
                fetch(f"http://127.0.0.1:{PORT}/metrics"))), 60, "discovery")
            work.stdin.write("go\n")
            work.stdin.flush()
            time.sleep(max(0.0, args.open_at - 1.0))
            opened_at = time.time()
            status = post(f"/api/v1/processes/{pid}/allocator")
            result = json.loads(work.stdout.readline())
            work.wait(timeout=60)
            views_opened = {l.get("reason"): v for n, l, v in parse_prometheus(
                fetch(f"http://127.0.0.1:{PORT}/metrics"))
                if n == "neutracer_allocator_views_opened_total"}
        finally:
            work.kill()
            daemon.terminate()
            daemon.wait(timeout=60)
            os.unlink(config.name)
    # Per whole second since the child's start: the median step time of steps ending in it.
    start = result["start"]
    by_second = {}
    previous = start
    for end in result["ends"]:
        by_second.setdefault(int(end - start), []).append(end - previous)
        previous = end
    open_from = opened_at - start + 1.0  # the next scan attaches; a second of margin
    open_to = open_from + args.open_for - 1.0
    phases = {"closed": [], "open": []}
    for second, steps in by_second.items():
        if second + 1 <= open_from - 1 or second >= open_to + 2:
            phases["closed"].append(statistics.median(steps))
        elif open_from <= second and second + 1 <= open_to:
            phases["open"].append(statistics.median(steps))
    closed, opened = phases["closed"], phases["open"]
    ratio = statistics.median(opened) / statistics.median(closed)
    low, high = bootstrap_ratio(opened, closed)
    per_alloc_us = ((statistics.median(opened) - statistics.median(closed)) /
                    result["allocs_per_step"] * 1e6)
    lines = [f"# Allocator view cost ({args.workload} step, one process: closed, open, closed)",
             "",
             f"POST answered {status}; view open {args.open_for} s from {open_from:.1f} s; "
             f"views opened by reason: {views_opened} (growth must be 0: one view, the asked one)",
             "",
             "| phase | seconds | median step (ms) |", "|---|---|---|",
             f"| closed | {len(closed)} | {statistics.median(closed) * 1e3:.3f} |",
             f"| open | {len(opened)} | {statistics.median(opened) * 1e3:.3f} |", "",
             f"open / closed: {ratio:.3f}x [{low:.3f}-{high:.3f}] (95 % bootstrap over seconds)",
             f"tensor allocations per step: {result['allocs_per_step']:.1f}; "
             f"cost per allocation and its free: {per_alloc_us:.2f} us"]
    with open(os.path.join(args.outdir, f"allocator_view_cost.{args.workload}.md"), "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
