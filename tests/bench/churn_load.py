#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Short-lived stand-in CUDA processes for tests/bench/churn.sh and soak.sh.

  churn_load.py SCENARIO --count N --parallel P [--exited FILE] [--seed S]
      N neutracer-scenario processes, P at a time, as fast as they finish.
  churn_load.py SCENARIO --rate R --duration S [--long K] [--exited FILE] [--seed S]
      R process starts per second for S seconds (at most --max-running at once; a start
      that would exceed it is skipped and counted), plus K long-lived processes that
      allocate, launch, copy and free in cycles for the whole run (restarted if they end).

Each short-lived process runs a small random variation of
`alloc:4096:2 launch:k:3 free:1`: 1-4 allocations of 4 KiB..1 MiB, some freed (or all, or
none: memory held at exit), 1-3 kernel names launched 1-5 times, and sometimes a device
context (device:0, an entry in the BPF thread_contexts map), a copy, a short sync, a second
launch API, or a sleep of up to 300 ms (so some live across a scan and are discovered,
others are never seen by the daemon). The PID of every reaped short-lived process is
appended to --exited (one a line) once it has exited. Prints one summary line:
  started N exited N failed N skipped N elapsed S rate R/s
and exits 1 if any process failed (non-zero exit or killed by a signal).
"""
import argparse
import os
import random
import signal
import sys
import time

KIB = 1024


def short_steps(rng):
    steps = []
    n_alloc = rng.randint(1, 4)
    size = rng.choice([4 * KIB, 4 * KIB, 64 * KIB, 1024 * KIB])
    if rng.random() < 0.2:
        steps.append("device:0")
    steps.append(f"alloc:{size}:{n_alloc}")
    for k in rng.sample(["k", "k1", "k2", "gemm", "reduce"], rng.randint(1, 3)):
        steps.append(f"launch:{k}:{rng.randint(1, 5)}")
    if rng.random() < 0.2:
        steps.append(f"launchex:kx:{rng.randint(1, 3)}")
    if rng.random() < 0.2:
        steps.append(f"h2d:{rng.choice([4096, 65536])}:{rng.randint(1, 3)}")
    if rng.random() < 0.1:
        steps.append("sync:1")
    if rng.random() < 0.3:
        steps.append(f"sleep:{rng.randint(1, 300)}")
    r = rng.random()
    if r < 0.5:
        steps.append(f"free:{rng.randint(1, n_alloc)}")
    elif r < 0.8:
        steps.append("free_all")
    # else: exits holding its allocations
    return steps


def long_steps(rng, seconds):
    """Cycles of about 0.5 s for SECONDS: allocate, launch, copy, free; bounded memory."""
    steps = ["device:0"]
    t = 0.0
    while t < seconds:
        n = rng.randint(1, 8)
        steps.append(f"alloc:{rng.choice([64 * KIB, 256 * KIB, 1024 * KIB])}:{n}")
        steps.append(f"launch:long{rng.randint(0, 9)}:{rng.randint(10, 200)}")
        if rng.random() < 0.3:
            steps.append(f"h2d:{65536}:{rng.randint(1, 4)}")
        ms = rng.randint(300, 700)
        steps.append(f"sleep:{ms}")
        steps.append(f"free:{n}")
        t += ms / 1000.0
    return steps


def spawn(scenario, steps):
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        actions = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                   (os.POSIX_SPAWN_DUP2, devnull, 2)]
        return os.posix_spawn(scenario, [scenario] + steps, os.environ, file_actions=actions)
    finally:
        os.close(devnull)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenario")
    ap.add_argument("--count", type=int)
    ap.add_argument("--parallel", type=int, default=12)
    ap.add_argument("--rate", type=float)
    ap.add_argument("--duration", type=float)
    ap.add_argument("--long", type=int, default=0)
    ap.add_argument("--max-running", type=int, default=64)
    ap.add_argument("--exited")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--progress", type=int, default=0, help="print a line every N exits")
    a = ap.parse_args()
    if (a.count is None) == (a.rate is None):
        ap.error("give --count or --rate")
    if a.rate is not None and a.duration is None:
        ap.error("--rate needs --duration")

    rng = random.Random(a.seed)
    exited_f = open(a.exited, "a", buffering=1) if a.exited else None
    running = {}  # pid -> "short" | "long"
    started = exited = failed = skipped = 0
    stop = False

    def on_term(_sig, _frm):
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    def reaped(pid, status):
        nonlocal exited, failed
        kind = running.pop(pid, None)
        if kind is None:
            return
        code = os.waitstatus_to_exitcode(status)
        if kind == "short":
            exited += 1
            if exited_f:
                exited_f.write(f"{pid}\n")
            if a.progress and exited % a.progress == 0:
                print(f"  {exited} exited, {time.monotonic() - t0:.0f}s", flush=True)
        if code != 0 and not (kind == "long" and stop):
            failed += 1
            print(f"process {pid} ({kind}) exited with {code}", file=sys.stderr, flush=True)

    def reap(block):
        while running:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if pid == 0:
                return
            reaped(pid, status)
            if block:
                return

    t0 = time.monotonic()
    if a.count is not None:
        while (started < a.count or running) and not stop:
            while started < a.count and len(running) < a.parallel and not stop:
                running[spawn(a.scenario, short_steps(rng))] = "short"
                started += 1
            reap(block=True)
    else:
        end = t0 + a.duration
        interval = 1.0 / a.rate
        next_start = t0
        longs = 0
        while not stop:
            now = time.monotonic()
            if now >= end:
                break
            while longs < a.long:  # (re)start long-lived ones
                running[spawn(a.scenario, long_steps(rng, end - now))] = "long"
                longs += 1
            while next_start <= now:
                if sum(1 for k in running.values() if k == "short") < a.max_running:
                    running[spawn(a.scenario, short_steps(rng))] = "short"
                    started += 1
                else:
                    skipped += 1
                next_start += interval
            time.sleep(max(0.0, min(next_start, end) - time.monotonic()))
            before = sum(1 for k in running.values() if k == "long")
            reap(block=False)
            longs -= before - sum(1 for k in running.values() if k == "long")
    # End: let short-lived ones finish, stop long-lived ones.
    stop = True
    for pid, kind in list(running.items()):
        if kind == "long":
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while running and time.monotonic() < deadline:
        reap(block=False)
        time.sleep(0.05)
    for pid in list(running):
        os.kill(pid, signal.SIGKILL)
    reap(block=True)
    elapsed = time.monotonic() - t0
    print(f"started {started} exited {exited} failed {failed} skipped {skipped} "
          f"elapsed {elapsed:.1f} rate {exited / elapsed:.1f}/s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
