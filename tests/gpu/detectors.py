#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Validates neutracerd's detectors on a GPU: each fault case must raise its alert, each
healthy job must raise none, and detection latency is measured.

    tests/gpu/detectors.py NEUTRACERD_BINARY OUTDIR [--phase-seconds 180] [--config FILE]

Phase 1 runs concurrently: leak_list, leak_graph, leak_varying, hang (faults) and cnn_train,
transformer, inference, warmup_steady, train_varying (healthy) for --phase-seconds, each leak
and healthy case but leak_varying twice: with PyTorch's default allocator and as `NAME+vmm` with
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (VMM allocations). Phase 2 runs oom_capacity, then fragmentation, alone
(each needs the whole GPU). The daemon runs with the shipped defaults unless --config names a
file.

Latency = time of the first notification in /api/v1/alerts - the case's FAULT time. Writes
OUTDIR/detectors.md (the table), daemon.log, alerts.json, final.metrics, and each case's
allocation stream as the daemon saw it (its last /api/v1/memory document) in
OUTDIR/streams/NAME.json, for replaying in unit tests. Exit status 0 when every row is as
expected, 1 otherwise, 2 on setup errors. Standard library only.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nt_common import fetch, parse_prometheus, select  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = int(os.environ.get("NT_PORT", "19556"))
URL = f"http://127.0.0.1:{PORT}"

# case -> alert kinds it must raise (empty: must raise none)
EXPECTED = {
    "leak_list": {"memory_leak"},
    "leak_graph": {"memory_leak"},
    "leak_varying": {"memory_leak"},
    "hang": {"hang"},
    "cnn_train": set(),
    "transformer": set(),
    "inference": set(),
    "warmup_steady": set(),
    "train_varying": set(),
    "oom_capacity": {"oom"},
    "fragmentation": {"oom", "fragmentation"},
}
# The same with expandable segments (the allocator maps VMM pages instead of cudaMalloc).
VMM_CASES = ["leak_list", "leak_graph", "cnn_train", "transformer", "inference", "warmup_steady",
             "train_varying"]
EXPECTED.update({f"{name}+vmm": EXPECTED[name] for name in VMM_CASES})
PHASE1 = ["leak_list", "leak_graph", "leak_varying", "hang", "cnn_train", "transformer",
          "inference", "warmup_steady", "train_varying"] + [f"{name}+vmm" for name in VMM_CASES]
# OOM cause each OOM case must report
EXPECTED_CAUSE = {"oom_capacity": "capacity", "fragmentation": "fragmentation"}

class Case:
    def __init__(self, name, seconds, outdir):
        self.name = name
        self.pid = None
        self.fault_time = None
        self.lines = []
        self.stream = None  # the last /api/v1/memory document
        self.log = open(os.path.join(outdir, f"{name}.log"), "w")
        base, _, variant = name.partition("+")
        expandable = "True" if variant == "vmm" else "False"
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "detector_cases.py"), base, str(seconds)],
            stdout=subprocess.PIPE, stderr=self.log, text=True,
            env=dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=f"expandable_segments:{expandable}"))
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            self.lines.append(line)
            self.log.write(line + "\n")
            self.log.flush()
            if line.startswith("READY "):
                self.pid = int(line.split()[1])
            elif line.startswith("FAULT "):
                self.fault_time = float(line.split()[1])

    def wait(self, timeout):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=5)


def poll_alerts(first_seen):
    """Records the first notification time per (pid, alert) from /api/v1/alerts."""
    try:
        alerts = json.loads(fetch(URL + "/api/v1/alerts"))
    except (RuntimeError, ValueError):
        return None
    for notice in alerts.get("recent", []):
        first_seen.setdefault((notice["pid"], notice["alert"]), notice)
    return alerts


def poll_streams(cases):
    """Keeps each running case's latest allocation stream (the daemon forgets it at exit)."""
    for c in cases:
        if c.pid is None or c.proc.poll() is not None:
            continue
        try:
            document = json.loads(fetch(f"{URL}/api/v1/memory?pid={c.pid}"))
        except (RuntimeError, ValueError):
            continue
        # CLOCK_MONOTONIC is shared with the daemon: the offset maps its times to FAULT's.
        document["unix_minus_monotonic"] = time.time() - time.monotonic()
        document["fault_unix"] = c.fault_time
        c.stream = document


def save_streams(cases, outdir):
    os.makedirs(os.path.join(outdir, "streams"), exist_ok=True)
    for c in cases:
        if c.stream is not None:
            with open(os.path.join(outdir, "streams", f"{c.name}.json"), "w") as f:
                json.dump(c.stream, f)


def run_phase(cases, seconds, first_seen, outdir, kill_at_end=()):
    deadline = time.time() + seconds + 120  # imports and model set-up
    def running():
        # Cases killed at the end run `seconds` past their fault; the others until they exit.
        return any(c.proc.poll() is None and (
            c.name not in kill_at_end or c.fault_time is None or
            time.time() < c.fault_time + seconds) for c in cases)

    polls = 0
    while time.time() < deadline and running():
        poll_alerts(first_seen)
        if polls % 5 == 0:
            poll_streams(cases)
        polls += 1
        time.sleep(1)
    poll_streams(cases)
    for c in cases:
        if c.name in kill_at_end and c.proc.poll() is None:
            poll_alerts(first_seen)
            c.proc.send_signal(signal.SIGKILL)
        c.wait(30)
    poll_alerts(first_seen)
    save_streams(cases, outdir)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("outdir")
    parser.add_argument("--phase-seconds", type=float, default=180)
    parser.add_argument("--only", default="", help="comma-separated cases to run (default: all)")
    parser.add_argument("--config", default="/dev/null",
                        help="daemon config (default: none, the shipped defaults)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("detectors.py: must run as root", file=sys.stderr)
        return 2
    os.makedirs(args.outdir, exist_ok=True)
    config = args.config
    env = dict(os.environ)
    libdir = os.path.join(os.path.dirname(os.path.abspath(args.binary)), "lib")
    if os.path.isdir(libdir):
        env["LD_LIBRARY_PATH"] = libdir
    daemon_log = open(os.path.join(args.outdir, "daemon.log"), "w")
    daemon = subprocess.Popen([args.binary, "--config", config, "--listen", f"127.0.0.1:{PORT}"],
                              stdout=daemon_log, stderr=daemon_log, env=env)
    try:
        for _ in range(100):
            try:
                fetch(URL + "/healthz")
                break
            except RuntimeError:
                time.sleep(0.2)
        else:
            print("detectors.py: daemon did not start; see daemon.log", file=sys.stderr)
            return 2

        first_seen = {}
        only = set(filter(None, args.only.split(",")))
        chosen = [n for n in EXPECTED if not only or n in only]
        phase1 = [Case(n, args.phase_seconds, args.outdir) for n in PHASE1 if n in chosen]
        run_phase(phase1, args.phase_seconds, first_seen, args.outdir, kill_at_end={"hang"})
        phase2 = []
        for name in [n for n in ["oom_capacity", "fragmentation"] if n in chosen]:
            case = Case(name, 15, args.outdir)
            run_phase([case], 15, first_seen, args.outdir)
            time.sleep(3)  # one more scan before the next case takes the GPU
            phase2.append(case)
        time.sleep(5)
        alerts = poll_alerts(first_seen)
        with open(os.path.join(args.outdir, "alerts.json"), "w") as f:
            json.dump({"final": alerts, "first_seen": [v for v in first_seen.values()]}, f,
                      indent=2)
        metrics_text = fetch(URL + "/metrics")
        with open(os.path.join(args.outdir, "final.metrics"), "w") as f:
            f.write(metrics_text)
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()

    samples = parse_prometheus(metrics_text)
    rows, ok = [], True
    for case in phase1 + phase2:
        raised = {alert for (pid, alert) in first_seen if pid == case.pid}
        expected = EXPECTED[case.name]
        good = case.pid is not None and raised == expected
        notes = []
        latencies = []
        for alert in sorted(raised):
            notice = first_seen[(case.pid, alert)]
            if case.fault_time is not None:
                latencies.append(f"{alert} {notice['time'] - case.fault_time:.1f} s")
        if case.name in EXPECTED_CAUSE:
            cause = EXPECTED_CAUSE[case.name]
            # The process has exited; its OOM shows in the notice fields.
            causes = {first_seen[(case.pid, "oom")]["fields"].get("OOM_CAUSE")} \
                if (case.pid, "oom") in first_seen else set()
            notes.append(f"cause {','.join(sorted(c for c in causes if c)) or '-'}")
            good = good and causes == {cause}
        for line in case.lines:
            if line.startswith(("OOM", "steps", "large")):
                notes.append(line)
        ok = ok and good
        rows.append(f"| {case.name} | {', '.join(sorted(expected)) or 'nothing'} | "
                    f"{', '.join(sorted(raised)) or 'nothing'} | {'; '.join(latencies) or '-'} | "
                    f"{'ok' if good else 'MISMATCH'} | {'; '.join(notes)} |")
    table = ["| case | must raise | raised | latency | result | notes |",
             "|---|---|---|---|---|---|"] + rows
    suppressed = sum(v for _, v in select(samples, "neutracer_alerts_suppressed_total"))
    table.append("")
    table.append(f"alerts suppressed: {suppressed:.0f}; phase length {args.phase_seconds:.0f} s; "
                 f"config {args.config}")
    text = "\n".join(table) + "\n"
    with open(os.path.join(args.outdir, "detectors.md"), "w") as f:
        f.write(text)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
