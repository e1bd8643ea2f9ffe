#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch workloads for tests/bench/gpu/run.py. One workload per process.

    torch_workloads.py WORKLOAD --condition plain|neutracerd|profiler --sync-dir DIR
                       [--iterations N] [--warmup N] [--timeout S] [--fake]

WORKLOAD:
  eager        x = x * 1.0001 + 0.1 on a 1024-element float32 tensor (two kernels per
               iteration); value = microseconds per iteration.
  cnn          small ResNet-like conv net, batch 64 of 3x32x32 synthetic images, SGD;
               value = milliseconds per training step.
  transformer  nn.TransformerEncoder (d_model 512, 8 heads, 6 layers, FFN 2048), sequence 256,
               batch 16 of synthetic tokens, AdamW; value = milliseconds per step.

Protocol (driven by run.py): set-up (import, CUDA context, model, data) happens first; then the
process prints `READY <pid>` and waits for DIR/go; it runs the warm-up iterations, then the timed
iterations between two torch.cuda.synchronize() calls (with --condition profiler the timed loop
alone runs inside torch.profiler.profile(activities=[CPU, CUDA])), prints `RESULT {json}`, waits
for DIR/release and exits. The plain and neutracerd conditions run identical code: the daemon is
the only difference, and run.py starts it.

--seconds S (segments.py): instead of --iterations, run steps for S seconds in chunks of
--chunk steps, each ended by a synchronize, and report each chunk's end (CLOCK_MONOTONIC) in
RESULT's "chunk_ends" (after "chunk_start"), so that a harness can time what ran while a daemon
was up and while it was not, inside one process.

--profiler-blocks S (paired.py, with --seconds): the chunked loop enters and leaves
torch.profiler.profile(activities=[CPU, CUDA]) in alternating blocks of about S seconds (each
0.75-1.25 x S at random, starting with a block without it), at chunk ends. RESULT gets
"profiler_on" (each block from after the profiler's enter returned to before its exit started)
and "profiler_busy" (the enter and exit calls themselves, to be left out).

--fake replaces the GPU work by short sleeps (run.py --dry-run); it needs no torch. In the
chunked mode the fake steps run slower while $NT_BENCH_FAKE_STATE/probes_on exists (fake.py's
daemon and symhits write it while their fake launch probes are "attached"; it holds the factor)
and while a fake profiler block is on.
"""
import argparse
import gc
import json
import math
import os
import random
import sys
import time

DEFAULTS = {  # workload: (iterations, warmup, unit)
    "eager": (20000, 1000, "us/iter"),
    "cnn": (200, 20, "ms/step"),
    "transformer": (50, 10, "ms/step"),
}


def die(message, code=2):
    print(f"torch_workloads.py: error: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def wait_file(path, timeout):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            die(f"timed out after {timeout:.0f} s waiting for {path}", 3)
        time.sleep(0.005)


# ------------------------------------------------------------------------------------------------
# Real workloads


def build_eager(torch, dev):
    x = torch.ones(1024, device=dev, dtype=torch.float32)
    state = {"x": x}

    def step():
        state["x"] = state["x"] * 1.0001 + 0.1

    def check():
        value = float(state["x"][0].item())
        return {"x0": value, "finite": math.isfinite(value)}

    return step, check


def build_cnn(torch, dev):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Identity()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + self.shortcut(x))

    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
        Block(32, 32, 1), Block(32, 64, 2), Block(64, 128, 2), Block(128, 128, 1),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10)).to(dev)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator(device=dev)
    gen.manual_seed(0)
    data = torch.randn(64, 3, 32, 32, device=dev, generator=gen)
    target = torch.randint(0, 10, (64,), device=dev, generator=gen)
    last = {}

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(data), target)
        loss.backward()
        opt.step()
        last["loss"] = loss

    def check():
        value = float(last["loss"].item())
        return {"loss": value, "finite": math.isfinite(value)}

    return step, check


def build_transformer(torch, dev):
    nn = torch.nn
    vocab, d_model, seq, batch = 8192, 512, 256, 16

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, d_model)
            self.pos = nn.Parameter(torch.zeros(1, seq, d_model))
            layer = nn.TransformerEncoderLayer(d_model=d_model, nhead=8, dim_feedforward=2048,
                                               dropout=0.1, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)
            self.head = nn.Linear(d_model, vocab)

        def forward(self, tokens):
            return self.head(self.encoder(self.embed(tokens) + self.pos))

    model = Model().to(dev)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator(device=dev)
    gen.manual_seed(0)
    tokens = torch.randint(0, vocab, (batch, seq), device=dev, generator=gen)
    target = torch.randint(0, vocab, (batch, seq), device=dev, generator=gen)
    last = {}

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model(tokens)
        loss = loss_fn(logits.reshape(-1, vocab), target.reshape(-1))
        loss.backward()
        opt.step()
        last["loss"] = loss

    def check():
        value = float(last["loss"].item())
        return {"loss": value, "finite": math.isfinite(value)}

    return step, check


BUILDERS = {"eager": build_eager, "cnn": build_cnn, "transformer": build_transformer}


def timed_loop(sync, step, iterations):
    gc.collect()
    gc.disable()
    try:
        sync()
        t0 = time.perf_counter()
        for _ in range(iterations):
            step()
        sync()
        return time.perf_counter() - t0
    finally:
        gc.enable()


class ProfilerBlocks:
    """Alternating blocks with and without a profiler, switched at chunk ends (--profiler-blocks).
    enter() and leave() start and stop the profiler; the time they take is recorded as busy."""

    def __init__(self, seconds, enter, leave, rng=None):
        self.seconds = seconds
        self.enter, self.leave = enter, leave
        self.rng = rng or random.Random()
        self.on, self.busy = [], []
        self.since = None  # start of the current block with the profiler, None while off
        self.next = None

    def length(self):
        return self.seconds * self.rng.uniform(0.75, 1.25)

    def start(self, now):
        self.next = now + self.length()

    def after_chunk(self, now):
        if now < self.next:
            return
        t0 = time.monotonic()
        if self.since is None:
            self.enter()
            t1 = time.monotonic()
            self.since = t1
        else:
            self.leave()
            t1 = time.monotonic()
            self.on.append([self.since, t0])
            self.since = None
        self.busy.append([t0, t1])
        self.next = t1 + self.length()

    def finish(self, result):
        if self.since is not None:
            t0 = time.monotonic()
            self.leave()
            self.on.append([self.since, t0])
            self.busy.append([t0, time.monotonic()])
            self.since = None
        result["profiler_on"] = self.on
        result["profiler_busy"] = self.busy


def chunked_loop(sync, step, seconds, chunk, result, blocks=None):
    """Steps for `seconds`, timing every `chunk` steps (one synchronize each). blocks: a
    ProfilerBlocks switched at chunk ends (its enter/exit fall inside the next chunk)."""
    gc.collect()
    gc.disable()
    try:
        sync()
        result["chunk_start"] = time.monotonic()
        ends = []
        deadline = result["chunk_start"] + seconds
        if blocks:
            blocks.start(result["chunk_start"])
        while not ends or ends[-1] < deadline:
            for _ in range(chunk):
                step()
            sync()
            ends.append(time.monotonic())
            if blocks and ends[-1] < deadline:
                blocks.after_chunk(ends[-1])
        if blocks:
            blocks.finish(result)
        result["chunk_ends"] = ends
        result["chunk_steps"] = chunk
        return ends[-1] - result["chunk_start"], chunk * len(ends)
    finally:
        gc.enable()


def torch_profiler_blocks(args, torch, dev, sync):
    """ProfilerBlocks around torch.profiler.profile(activities=[CPU, CUDA])."""
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU]
    if dev == "cuda":
        activities.append(ProfilerActivity.CUDA)
    state = {"prof": None, "device_events": []}

    def enter():
        state["prof"] = profile(activities=activities)
        state["prof"].__enter__()

    def leave():
        sync()
        prof, state["prof"] = state["prof"], None
        prof.__exit__(None, None, None)
        try:  # proof that the block recorded device work (informational, inside the busy time)
            events = prof.profiler.kineto_results.events()
            state["device_events"].append(sum(1 for e in events
                                              if "CUDA" in str(e.device_type()).upper()))
        except Exception:  # noqa: BLE001 - API differences between torch versions
            pass
        del prof
        gc.collect()

    return ProfilerBlocks(args.profiler_blocks, enter, leave), state


def run_real(args, result):
    t_import = time.perf_counter()
    try:
        import torch
    except ImportError as exc:
        die(f"cannot import torch: {exc}")
    dev = args.device
    if dev == "cuda":
        if not torch.cuda.is_available():
            die("torch.cuda.is_available() is False")
        sync = torch.cuda.synchronize
        result["device"] = torch.cuda.get_device_name(0)
    else:  # --device cpu: checks this file's logic on a machine without a GPU
        sync = lambda: None  # noqa: E731
        result["device"] = "cpu"
    result["import_seconds"] = round(time.perf_counter() - t_import, 3)
    result["torch"] = torch.__version__
    torch.manual_seed(0)
    step, check = BUILDERS[args.workload](torch, dev)
    sync()

    print(f"READY {os.getpid()}", flush=True)
    wait_file(os.path.join(args.sync_dir, "go"), args.timeout)

    t_w = time.perf_counter()
    for _ in range(args.warmup):
        step()
    sync()
    result["warmup_seconds"] = round(time.perf_counter() - t_w, 4)

    if args.condition == "profiler":
        from torch.profiler import ProfilerActivity, profile
        t_enter = time.perf_counter()
        activities = [ProfilerActivity.CPU]
        if dev == "cuda":
            activities.append(ProfilerActivity.CUDA)
        with profile(activities=activities) as prof:
            entered = time.perf_counter()
            seconds = timed_loop(sync, step, args.iterations)
            t_exit = time.perf_counter()
        exited = time.perf_counter()
        info = {"enter_seconds": round(entered - t_enter, 4),
                "exit_seconds": round(exited - t_exit, 4)}
        # Proof that the profiler recorded the loop (informational, outside the timing).
        try:
            events = prof.profiler.kineto_results.events()
            info["events"] = len(events)
            info["device_events"] = sum(1 for e in events
                                        if "CUDA" in str(e.device_type()).upper())
        except Exception as exc:  # API differences between torch versions
            info["events_error"] = f"{type(exc).__name__}: {exc}"
        result["profiler"] = info
    elif args.seconds > 0:
        blocks = state = None
        if args.profiler_blocks > 0:
            blocks, state = torch_profiler_blocks(args, torch, dev, sync)
        seconds, args.iterations = chunked_loop(sync, step, args.seconds, args.chunk, result,
                                                blocks)
        if state is not None:
            result["profiler"] = {"blocks": len(result["profiler_on"]),
                                  "device_events": state["device_events"]}
    else:
        seconds = timed_loop(sync, step, args.iterations)
    result["seconds"] = seconds
    result["check"] = check()
    if dev == "cuda":
        result["max_memory_allocated"] = int(torch.cuda.max_memory_allocated())


# ------------------------------------------------------------------------------------------------
# Fake workloads (run.py --dry-run): same protocol, sleeps instead of GPU work.

FAKE_BASE = {"eager": 9.0, "cnn": 4.0, "transformer": 20.0}  # value with no tool


def fake_daemon_running(state_dir):
    try:
        with open(os.path.join(state_dir, "daemon.pid")) as f:
            os.kill(int(f.read().strip()), 0)
        return True
    except (OSError, ValueError):
        return False


def fake_write_state(state_dir, launches):
    if not state_dir:
        return
    path = os.path.join(state_dir, f"{os.getpid()}.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "comm": "python3", "launches": launches,
                   "kernel": "vectorized_elementwise_kernel", "gpu_bytes": 8 << 20}, f)
    os.replace(path + ".tmp", path)


def fake_probe_factor(state_dir):
    """The slow-down fake.py's daemon or symhits asks for while their probes are "on"."""
    if not state_dir:
        return 1.0
    try:
        with open(os.path.join(state_dir, "probes_on")) as f:
            return float(f.read().strip() or 1.0)
    except (OSError, ValueError):
        return 1.0


def fake_chunked(args, result, state_dir, chunk_seconds):
    """The chunked loop with sleeps: each chunk sleeps in short pieces, each piece stretched by
    what is on at that moment (the fake daemon, fake probes, a fake profiler block)."""
    prof = {"on": False}

    def enter():
        time.sleep(0.05)
        prof["on"] = True

    def leave():
        prof["on"] = False
        time.sleep(0.1)

    blocks = ProfilerBlocks(args.profiler_blocks, enter, leave) if args.profiler_blocks > 0 \
        else None
    result["chunk_start"] = time.monotonic()
    deadline = result["chunk_start"] + args.seconds
    if blocks:
        blocks.start(result["chunk_start"])
    ends = []
    while not ends or ends[-1] < deadline:
        # Sleeps to absolute times from the chunk's start, so that the bookkeeping costs
        # nothing and the factors apply exactly.
        target = ends[-1] if ends else result["chunk_start"]
        fake_write_state(state_dir, (args.warmup + args.chunk * len(ends)) * 2)
        slow = 1.08 if fake_daemon_running(state_dir) else 1.0
        left = chunk_seconds
        while left > 1e-12:
            piece = min(left, 0.005)
            target += piece * slow * fake_probe_factor(state_dir) * (1.3 if prof["on"] else 1.0)
            time.sleep(max(0.0, target - time.monotonic()))
            left -= piece
        ends.append(time.monotonic())
        if blocks and ends[-1] < deadline:
            blocks.after_chunk(ends[-1])
    if blocks:
        blocks.finish(result)
        result["profiler"] = {"blocks": len(result["profiler_on"]), "device_events": []}
    result["chunk_ends"] = ends
    result["chunk_steps"] = args.chunk
    args.iterations = args.chunk * len(ends)


def run_fake(args, result):
    if os.environ.get("NT_BENCH_FAKE_FAIL", "") == args.workload:
        die("NT_BENCH_FAKE_FAIL asked this fake workload to fail", 4)
    state_dir = os.environ.get("NT_BENCH_FAKE_STATE", "")
    time.sleep(0.2)  # "import torch"
    if os.environ.get("NT_BENCH_STANDIN_LIB"):  # run.py --standin: map the stand-in driver
        import ctypes
        ctypes.CDLL(os.environ["NT_BENCH_STANDIN_LIB"])
    result["torch"] = "fake"
    result["device"] = "fake GPU"
    fake_write_state(state_dir, 0)
    print(f"READY {os.getpid()}", flush=True)
    wait_file(os.path.join(args.sync_dir, "go"), args.timeout)
    factor = 1.0
    if fake_daemon_running(state_dir):
        factor *= 1.08
    if args.condition == "profiler":
        factor *= 1.6
        result["profiler"] = {"enter_seconds": 0.01, "exit_seconds": 0.02,
                              "events": 2 * args.iterations, "device_events": args.iterations}
    time.sleep(0.1)
    per = FAKE_BASE[args.workload] * factor * random.uniform(0.97, 1.03)
    scale = 1e-6 if args.workload == "eager" else 1e-3
    if args.seconds > 0:  # chunks that sleep longer while the fake daemon runs
        fake_chunked(args, result, state_dir, FAKE_BASE[args.workload] * scale * args.chunk)
    result["seconds"] = per * scale * args.iterations
    result["check"] = {"finite": True}
    fake_write_state(state_dir, (args.warmup + args.iterations) * 2)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", choices=sorted(DEFAULTS))
    parser.add_argument("--condition", choices=["plain", "neutracerd", "profiler"], required=True)
    parser.add_argument("--sync-dir", required=True)
    parser.add_argument("--iterations", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=-1)
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds to wait for each file from run.py")
    parser.add_argument("--seconds", type=float, default=0,
                        help="run for this long in timed chunks instead of --iterations")
    parser.add_argument("--chunk", type=int, default=0,
                        help="steps per timed chunk with --seconds (default: by workload)")
    parser.add_argument("--profiler-blocks", type=float, default=0, metavar="SECONDS",
                        help="with --seconds: enter and leave torch.profiler in alternating "
                        "blocks of about this many seconds (paired.py --toggler profiler)")
    parser.add_argument("--fake", action="store_true")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                        help="cpu: check this file without a GPU (run.py always uses cuda)")
    args = parser.parse_args()
    iterations, warmup, unit = DEFAULTS[args.workload]
    if args.iterations <= 0:
        args.iterations = iterations
    if args.warmup < 0:
        args.warmup = warmup
    if args.profiler_blocks > 0 and (args.seconds <= 0 or args.condition == "profiler"):
        parser.error("--profiler-blocks needs --seconds and a condition other than profiler")
    if args.chunk <= 0:  # about 50-100 ms of work per chunk
        args.chunk = {"eager": 4000, "cnn": 20, "transformer": 4}[args.workload]

    result = {"workload": args.workload, "condition": args.condition, "pid": os.getpid(),
              "iterations": args.iterations, "warmup": args.warmup, "unit": unit}
    t_start = time.perf_counter()
    if args.fake:
        run_fake(args, result)
    else:
        run_real(args, result)
    scale = 1e6 if args.workload == "eager" else 1e3
    result["value"] = result["seconds"] * scale / args.iterations
    result["process_seconds"] = round(time.perf_counter() - t_start, 3)
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)
    wait_file(os.path.join(args.sync_dir, "release"), args.timeout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
