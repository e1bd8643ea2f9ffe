#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What call sites (stack walks in the probes) cost PyTorch work on a GPU host: run.py with
`stacks: {enabled: false}` and with the defaults (stacks on), alternated.

    python3 tests/bench/gpu/stacks_cost.py NEUTRACERD_BINARY OUTDIR [--rounds 2]
                                           [--progstats tests/bench/gpu/launch_cost/progstats]
                                           [-- RUN_PY_ARGS...]

Each round runs tests/bench/gpu/run.py twice, stacks off then on (on then off in even rounds),
one round of run.py each (`--reps 1 --sections bench --no-profiler`, workloads eager, cnn and
transformer unless RUN_PY_ARGS say otherwise), so every run.py call measures its own plain
runs too. With --progstats (build it with `make progstats` in launch_cost/), each BPF program's
hits and own time per step are recorded: what the walks add inside the programs (allocations
walk at their return, synchronisations at their entry, 1 launch in `launch_sample_every` at its
entry). Writes OUTDIR/stacks_cost.md and OUTDIR/stacks_cost.json from every run.py's
bench.json (OUTDIR/off-N, OUTDIR/on-N). Root; no other neutracerd may run.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import fmt, fmt_cell, stats, steps_run  # noqa: E402

CONDITIONS = ("off", "on")
OFF_CONFIG = "stacks: {enabled: false}\n"


def collect(runs):
    """runs: [(condition, bench.json document)] -> per workload: plain and per-condition values,
    and per (workload, program, condition): ns per hit and hits per step of each run."""
    values = collections.defaultdict(lambda: collections.defaultdict(list))
    bpf = collections.defaultdict(lambda: collections.defaultdict(list))
    for condition, data in runs:
        for s in data.get("samples", []):
            if not s.get("ok"):
                continue
            w = s["workload"]
            if s["condition"] == "plain":
                values[w]["plain"].append(s["value"])
            elif s["condition"] == "neutracerd":
                values[w][condition].append(s["value"])
                steps = steps_run(s.get("result", {}))
                for program, d in (s.get("bpf") or {}).items():
                    if steps and d["hits"]:
                        bpf[(w, program)][condition].append((d["ns"] / d["hits"], d["hits"] / steps))
    return values, bpf


def render(runs):
    values, bpf = collect(runs)
    out = ["# Call sites off and on (run.py, alternated)", "",
           "Median (min–max) over the runs; one fresh process per run. on/off: ratio of the "
           "medians.", "",
           "| workload | plain | stacks off | stacks on | on/off |", "|---|---|---|---|---|"]
    for w, row in values.items():
        off, on = row.get("off", []), row.get("on", [])
        ratio = (f"{statistics.median(on) / statistics.median(off):.3f}" if off and on else "n/a")
        out.append(f"| {w} | {fmt_cell(stats(row.get('plain', [])))} | {fmt_cell(stats(off))} | "
                   f"{fmt_cell(stats(on))} | {ratio} |")
    if bpf:
        out += ["", "BPF programs under the daemon (`--progstats`): a program's own ns per hit and "
                "hits per step, median over the runs.", "",
                "| workload | program | ns/hit off | ns/hit on | hits/step off | hits/step on |",
                "|---|---|---|---|---|---|"]
        for (w, program), row in sorted(bpf.items()):
            cells = []
            for index in (0, 1):
                for condition in CONDITIONS:
                    got = [x[index] for x in row.get(condition, [])]
                    cells.append(fmt(statistics.median(got)) if got else "n/a")
            out.append(f"| {w} | `{program}` | {cells[0]} | {cells[1]} | {cells[2]} | "
                       f"{cells[3]} |")
    return "\n".join(out) + "\n"


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary")
    p.add_argument("outdir")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--progstats", default=None)
    p.add_argument("--python", default=sys.executable, help="interpreter with torch")
    args = p.parse_args(argv)
    outdir = os.path.abspath(args.outdir)
    os.makedirs(outdir, exist_ok=True)
    off_config = os.path.join(outdir, "stacks-off.yaml")
    with open(off_config, "w") as f:
        f.write(OFF_CONFIG)
    base = ["--reps", "1", "--sections", "bench", "--no-profiler", "--python", args.python]
    if not any(a.startswith("--workloads") for a in extra):
        base += ["--workloads", "eager,cnn,transformer"]
    if args.progstats:
        base += ["--progstats", args.progstats]
    runs, status = [], 0
    for rnd in range(1, args.rounds + 1):
        for condition in (CONDITIONS if rnd % 2 else tuple(reversed(CONDITIONS))):
            folder = os.path.join(outdir, f"{condition}-{rnd}")
            cmd = [sys.executable, os.path.join(HERE, "run.py"), args.binary, folder] + base
            if condition == "off":
                cmd += ["--daemon-config", off_config]
            print(f"[stacks_cost] round {rnd}, stacks {condition}: {' '.join(cmd)}", flush=True)
            rc = subprocess.call(cmd + extra)
            status = max(status, rc)
            try:
                with open(os.path.join(folder, "bench.json")) as f:
                    runs.append((condition, json.load(f)))
            except (OSError, ValueError) as exc:
                print(f"[stacks_cost] no bench.json from {folder}: {exc}", flush=True)
                status = max(status, 1)
    report = render(runs)
    with open(os.path.join(outdir, "stacks_cost.md"), "w") as f:
        f.write(report)
    with open(os.path.join(outdir, "stacks_cost.json"), "w") as f:
        json.dump({"runs": [{"condition": c, "samples": d.get("samples", [])} for c, d in runs]},
                  f, indent=1)
    print(report)
    return status


if __name__ == "__main__":
    sys.exit(main())
