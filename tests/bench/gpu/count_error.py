#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Counting error and cost of sampled (adaptive) launch counting over a long steady run, on a GPU
host.

    python3 tests/bench/gpu/count_error.py NEUTRACERD_BINARY OUTDIR [--workload cnn]
            [--iterations 10000] [--rounds 1] [--sampled-config 'cuda: {launch_counting: adaptive}']

Runs the same PyTorch workload (tests/bench/gpu/torch_workloads.py; a fixed number of steps, so
the same launches every time) with no daemon, under neutracerd with an explicit `cuda:
{launch_counting: exact}` and under neutracerd with the explicit sampled config of
--sampled-config (default `cuda: {launch_counting: adaptive}`; neither relies on the daemon's
default mode), in that order, `--rounds` times (then each --variant). Each daemon run reads the
process's `neutracer_cuda_kernel_launches_total` once the timed loop has ended, while the process
is alive. Exact mode is the ground truth (the stand-in tests prove it exact); the report gives
each round's relative error of the sampled estimate against that round's exact count, their mean
and largest magnitude, the time per step of each condition, and the sampling ratio the daemon
reported during the run. Writes OUTDIR/count_error.md and OUTDIR/count_error.json. Root; no
other neutracerd may run.

--fake: fake.py's daemon and sleeping workloads (checks this script; no GPU, no root): the fake
daemon's sampled counts are off by NT_BENCH_FAKE_SAMPLING_ERROR (default +0.2 %).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "gpu"))
from nt_common import fetch, parse_prometheus, value_sum, wait_for  # noqa: E402

PORT = 19558
EXACT_CONFIG = "cuda: {launch_counting: exact}"
SAMPLED_CONFIG = "cuda: {launch_counting: adaptive}"


def scrape():
    try:
        return parse_prometheus(fetch(f"http://127.0.0.1:{PORT}/metrics"))
    except Exception:  # noqa: BLE001 - not up yet
        return None


class Daemon:
    def __init__(self, binary, config_text, log_path, log_level="info", fake=False):
        self.config = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        self.config.write(config_text)
        self.config.close()
        env = dict(os.environ)
        command = [binary]
        if fake:
            command = [sys.executable, os.path.join(HERE, "fake.py"), "daemon"]
        else:
            lib = os.path.join(os.path.dirname(os.path.abspath(binary)), "lib")
            if os.path.isdir(lib):
                env["LD_LIBRARY_PATH"] = lib + ":" + env.get("LD_LIBRARY_PATH", "")
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(
            command + ["--config", self.config.name, "--listen", f"127.0.0.1:{PORT}",
                       "--scan-interval", "500ms", "--log-level", log_level],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)
        wait_for(scrape, 30, "the daemon's /metrics")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=120)
        self.log.close()
        os.unlink(self.config.name)


def run_workload(args, condition, daemon_up, outdir, label):
    sync = tempfile.mkdtemp(prefix="nt-count-")
    cmd = [sys.executable, os.path.join(HERE, "torch_workloads.py"), args.workload,
           "--condition", "neutracerd" if daemon_up else "plain", "--sync-dir", sync,
           "--iterations", str(args.iterations), "--timeout", "900"] + (
               ["--fake"] if args.fake else [])
    with open(os.path.join(outdir, f"{label}.stderr"), "w") as err:
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        line = child.stdout.readline()
        if not line.startswith("READY"):
            raise RuntimeError(f"{label}: workload did not start: {line!r}")
        pid = line.split()[1]
        if daemon_up and not args.fake:  # discovered (its launch probes are attached in the same scan)
            wait_for(lambda: (s := scrape()) and any(l.get("pid") == pid for _, l, _ in s),
                     60, f"{label}: discovery of pid {pid}")
        open(os.path.join(sync, "go"), "w").close()
        ratios = []
        result = None
        while result is None:
            line = child.stdout.readline()
            if not line:
                raise RuntimeError(f"{label}: workload ended without a result")
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
        launches = None
        if daemon_up:
            time.sleep(1.5)  # three scans: the last window's counts are read and scaled
            samples = scrape()
            # Exact counts and estimates are exported in two families, never summed together.
            exact = value_sum(samples, "neutracer_cuda_kernel_launches_total", pid=pid)
            estimated = value_sum(samples, "neutracer_cuda_kernel_launches_estimated_total",
                                  pid=pid)
            launches = estimated if estimated else exact
            ratios = [v for n, l, v in samples
                      if n == "neutracer_cuda_launch_counted_time_ratio" and l.get("pid") == pid]
            bounds = [v for n, l, v in samples
                      if n == "neutracer_cuda_launch_estimate_relative_error"
                      and l.get("pid") == pid]
        open(os.path.join(sync, "release"), "w").close()
        child.wait(timeout=60)
    return {"condition": condition, "value": result["value"], "unit": result["unit"],
            "seconds": result["seconds"], "launches": launches,
            "counted_time_ratio": ratios[0] if ratios else None,
            "error_bound_pct": 100 * bounds[0] if bounds else None,
            "estimated": bool(daemon_up and estimated)}


def relative_error(launches, exact):
    """The estimate's error against the exact count, in percent (None when either is missing)."""
    if launches is None or not exact:
        return None
    return 100.0 * (launches - exact) / exact


def add_errors(runs):
    """Each daemon run's relative error against its round's exact run."""
    for r in runs:
        exact = next((x["launches"] for x in runs
                      if x["round"] == r["round"] and x["condition"] == "exact"), None)
        r["error_pct"] = (None if r["condition"] in ("plain", "exact")
                          else relative_error(r["launches"], exact))


def error_summary(runs, condition):
    """'r1 +0.20 %, r2 -0.10 %; mean |error| 0.15 %, largest 0.20 %' for one condition."""
    errors = [(r["round"], r["error_pct"]) for r in runs
              if r["condition"] == condition and r.get("error_pct") is not None]
    if not errors:
        return None
    per = ", ".join(f"r{rnd} {e:+.2f} %" for rnd, e in errors)
    mags = [abs(e) for _, e in errors]
    return (f"{per}; mean |error| {statistics.fmean(mags):.2f} %, largest {max(mags):.2f} % "
            f"({len(errors)} round(s))")


def main():
    global PORT
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary")
    p.add_argument("outdir")
    p.add_argument("--workload", default="cnn", choices=["cnn", "eager", "transformer"])
    p.add_argument("--iterations", type=int, default=10000)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--log-level", default="info",
                   help="the daemon's; debug logs each sampled window's raw figures")
    p.add_argument("--sampled-config", default=SAMPLED_CONFIG, metavar="YAML_TEXT",
                   help="the sampled run's daemon config, compared with an explicit "
                        f"`{EXACT_CONFIG}` run (default `{SAMPLED_CONFIG}`)")
    p.add_argument("--port", type=int, default=PORT, help="the daemon's /metrics port")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=YAML",
                   help="a further daemon config run after `sampled` in each round, its "
                        "estimate compared with exact too (e.g. 'p4=cuda: "
                        "{launch_sample_period: 4s}'); repeatable")
    p.add_argument("--no-plain", action="store_true", help="skip the runs without a daemon")
    p.add_argument("--fake", action="store_true",
                   help="CPU sleeps instead of PyTorch (checks this script; no launches)")
    args = p.parse_args()
    PORT = args.port
    os.makedirs(args.outdir, exist_ok=True)
    if args.fake:
        os.environ.setdefault("NT_BENCH_FAKE_STATE", tempfile.mkdtemp(prefix="nt-count-state-"))
    variants = [("exact", EXACT_CONFIG + "\n"), ("sampled", args.sampled_config + "\n")]
    for spec in args.variant:
        name, _, config = spec.partition("=")
        variants.append((name, config + "\n"))
    runs = []
    for rnd in range(1, args.rounds + 1):
        first = len(runs)
        if not args.no_plain:
            runs.append(run_workload(args, "plain", False, args.outdir, f"r{rnd}-plain"))
        for mode, config in variants:
            daemon = Daemon(args.binary, config, os.path.join(args.outdir, f"r{rnd}-{mode}.log"),
                            args.log_level, fake=args.fake)
            try:
                runs.append(run_workload(args, mode, True, args.outdir, f"r{rnd}-{mode}"))
            finally:
                daemon.stop()
        for run in runs[first:]:
            run["round"] = rnd
        print(json.dumps(runs[first:]), flush=True)

    def med(cond, key):
        values = [r[key] for r in runs if r["condition"] == cond and r[key] is not None]
        return statistics.median(values) if values else None

    add_errors(runs)
    lines = [f"# Sampled launch counting over a steady run: {args.workload}, "
             f"{args.iterations} steps, {args.rounds} round(s)", "",
             f"Configs: exact `{EXACT_CONFIG}`; sampled `{args.sampled_config}`"
             + "".join(f"; {name} `{config.strip()}`" for name, config in variants[2:]), "",
             "| round | condition | time per step | seconds | launches counted | "
             "error vs exact | exported error bound | counted time |",
             "|---|---|---|---|---|---|---|---|"]
    for r in runs:
        error = "" if r["error_pct"] is None else f"{r['error_pct']:+.2f} %"
        launches = "" if r["launches"] is None else str(int(r["launches"]))
        if r.get("estimated"):
            launches += " (estimate)"
        bound = "" if r.get("error_bound_pct") is None else f"±{r['error_bound_pct']:.2f} %"
        if bound and r["error_pct"] is not None:
            bound += " (covers)" if abs(r["error_pct"]) <= r["error_bound_pct"] else " (MISSED)"
        ratio = "" if r["counted_time_ratio"] is None else f"{r['counted_time_ratio']:.3f}"
        lines.append(f"| {r['round']} | {r['condition']} | {r['value']:.4f} {r['unit']} | "
                     f"{r['seconds']:.1f} | {launches} | {error} | {bound} | {ratio} |")
    lines.append("")
    for cond in [name for name, _ in variants[1:]]:
        summary = error_summary(runs, cond)
        lines.append(f"{cond} vs exact, each round's relative error: "
                     + (summary or "n/a (no counts)"))
    plain = med("plain", "value")
    for cond in [name for name, _ in variants]:
        value = med(cond, "value")
        if plain and value:
            lines.append(f"\n{cond}: {value / plain:.4f} x plain (medians)")
    with open(os.path.join(args.outdir, "count_error.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.outdir, "count_error.json"), "w") as f:
        json.dump({"args": vars(args), "runs": runs}, f, indent=1)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
