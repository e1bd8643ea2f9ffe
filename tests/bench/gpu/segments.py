#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The daemon's cost on one steady workload process, measured by switching the daemon on and off.

    python3 tests/bench/gpu/segments.py NEUTRACERD_BINARY OUTDIR [--workload cnn]
            [--seconds 180] [--segment 12] [--settle 3] [--daemon-config FILE] [--fake]

Separate runs of a small-kernel workload on the GPU VMs differ by ±10-20 % (BENCHMARKS.md),
more than the cost to be measured. Here one workload process (torch_workloads.py --seconds)
steps for the whole run and timestamps every chunk of steps, while neutracerd is started and
stopped in turn: segments of `--segment` seconds without and with the daemon. The first
`--settle` seconds of each segment are left out (the daemon discovers the process, attaches,
and in adaptive mode counts its first period exactly; stopping detaches). Each segment with the
daemon is compared with the mean of the segments without it just before and after, which
cancels a slow drift. Reports the median ratio and its range; writes OUTDIR/segments.md and
OUTDIR/segments.json. Root; no other neutracerd may run.

--fake: fake.py's daemon and a sleeping workload (checks this script without a GPU or root).
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from count_error import PORT, scrape, wait_for  # noqa: E402


class Daemon:
    """One neutracerd (or fake.py daemon) run, up once the workload's pid is discovered."""

    def __init__(self, command, config_text, log_path, pid, env):
        self.config = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        self.config.write(config_text)
        self.config.close()
        self.log = open(log_path, "a")
        self.process = subprocess.Popen(
            command + ["--config", self.config.name, "--listen", f"127.0.0.1:{PORT}",
                       "--scan-interval", "500ms"], stdout=self.log, stderr=subprocess.STDOUT,
            env=env)
        wait_for(lambda: (s := scrape()) and any(l.get("pid") == pid for _, l, _ in s), 60,
                 f"discovery of pid {pid}")
        self.up = time.monotonic()

    def stop(self):
        down = time.monotonic()
        self.process.terminate()
        self.process.wait(timeout=120)
        self.log.close()
        os.unlink(self.config.name)
        return down


def segment_rates(result, segments, settle):
    """Time per step inside each segment, from the chunks that ended in it after settling."""
    ends = [result["chunk_start"]] + result["chunk_ends"]
    scale = 1e6 if result["workload"] == "eager" else 1e3
    rows = []
    for seg in segments:
        begin = seg["start"] + settle
        chunks = [(a, b) for a, b in zip(ends, ends[1:]) if a >= begin and b <= seg["end"]]
        if not chunks:
            continue
        seconds = sum(b - a for a, b in chunks)
        steps = len(chunks) * result["chunk_steps"]
        rows.append(dict(seg, chunks=len(chunks), value=seconds * scale / steps))
    return rows


def compare(rows):
    """Each segment with the daemon against the mean of its neighbours without it."""
    ratios = []
    for i, row in enumerate(rows):
        if not row["daemon"]:
            continue
        near = [rows[j]["value"] for j in (i - 1, i + 1)
                if 0 <= j < len(rows) and not rows[j]["daemon"]]
        if near:
            ratios.append(row["value"] / statistics.mean(near))
    return ratios


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary", help="neutracerd (with --fake: ignored, fake.py's daemon runs)")
    p.add_argument("outdir")
    p.add_argument("--workload", default="cnn", choices=["cnn", "eager", "transformer"])
    p.add_argument("--seconds", type=float, default=180)
    p.add_argument("--segment", type=float, default=12)
    p.add_argument("--settle", type=float, default=3)
    p.add_argument("--daemon-config", help="config file for the daemon (default: defaults)")
    p.add_argument("--fake", action="store_true")
    args = p.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    config_text = open(args.daemon_config).read() if args.daemon_config else "\n"
    env = dict(os.environ)
    if args.fake:
        command = [sys.executable, os.path.join(HERE, "fake.py"), "daemon"]
        env.setdefault("NT_BENCH_FAKE_STATE", tempfile.mkdtemp(prefix="nt-seg-state-"))
    else:
        command = [os.path.abspath(args.binary)]
        lib = os.path.join(os.path.dirname(command[0]), "lib")
        if os.path.isdir(lib):
            env["LD_LIBRARY_PATH"] = lib + ":" + env.get("LD_LIBRARY_PATH", "")

    sync = tempfile.mkdtemp(prefix="nt-seg-")
    cmd = [sys.executable, os.path.join(HERE, "torch_workloads.py"), args.workload,
           "--condition", "neutracerd", "--sync-dir", sync, "--seconds", str(args.seconds),
           "--timeout", "900"] + (["--fake"] if args.fake else [])
    log_path = os.path.join(args.outdir, "daemon.log")
    segments = []
    with open(os.path.join(args.outdir, "workload.stderr"), "w") as err:
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        line = child.stdout.readline()
        if not line.startswith("READY"):
            raise RuntimeError(f"workload did not start: {line!r}")
        pid = line.split()[1]
        open(os.path.join(sync, "go"), "w").close()
        start = time.monotonic()
        daemon_on = False
        while child.poll() is None and time.monotonic() - start < args.seconds:
            if daemon_on:
                daemon = Daemon(command, config_text, log_path, pid, env)
                seg = {"daemon": True, "start": daemon.up}
                time.sleep(args.segment)
                seg["end"] = daemon.stop()
                # Stopping detaches; the next segment starts when the daemon has exited.
            else:
                seg = {"daemon": False, "start": time.monotonic()}
                time.sleep(args.segment)
                seg["end"] = time.monotonic()
            segments.append(seg)
            daemon_on = not daemon_on
        result = None
        for line in child.stdout:  # the workload waits for "release" after its RESULT line
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
                break
        open(os.path.join(sync, "release"), "w").close()
        child.wait(timeout=120)
    if result is None:
        raise RuntimeError("the workload ended without a result")

    rows = segment_rates(result, segments, args.settle)
    ratios = compare(rows)
    unit = result["unit"]
    lines = [f"# Daemon on/off in one process: {args.workload}, {args.seconds:.0f} s, "
             f"{args.segment:.0f} s segments ({args.settle:.0f} s settle left out)", "",
             f"| segment | daemon | chunks | {unit} |", "|---|---|---|---|"]
    for i, row in enumerate(rows):
        lines.append(f"| {i + 1} | {'on' if row['daemon'] else 'off'} | {row['chunks']} | "
                     f"{row['value']:.4f} |")
    if ratios:
        lines.append(f"\nwith/without (each on-segment vs its neighbours): median "
                     f"{statistics.median(ratios):.4f}, range {min(ratios):.4f}-"
                     f"{max(ratios):.4f}, {len(ratios)} segments")
    with open(os.path.join(args.outdir, "segments.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.outdir, "segments.json"), "w") as f:
        json.dump({"args": vars(args), "segments": rows, "ratios": ratios}, f, indent=1)
    print("\n".join(lines))
    return 0 if ratios else 1


if __name__ == "__main__":
    sys.exit(main())
