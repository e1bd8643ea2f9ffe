#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The cost of launch probes (and of torch.profiler) inside ONE workload process, switched on and
off in alternating blocks, with a confidence interval that can resolve 1 %.

    python3 tests/bench/gpu/paired.py NEUTRACERD_BINARY OUTDIR
            [--workloads eager] [--togglers daemon] [--seconds 40] [--block 1.0]
            [--settle 0.25] [--warmup 6] [--daemon-cpus 0-1] [--workload-cpus 2-]
            [--daemon-config YAML_OR_FILE] [--budget-minutes 9] [--fake]

Separate processes of a small-kernel workload on a shared GPU host differ by 15-25 %, so fresh
runs with and without a tool cannot see a few percent. Here one workload process
(torch_workloads.py --seconds, or cuda_bench.cu's `chunked` mode for `raw`) runs for --seconds
and timestamps every chunk of steps (50-100 ms of work, each ended by a device synchronisation)
with CLOCK_MONOTONIC, while a toggler switches probes on and off on that very process:

  daemon    neutracerd (NEUTRACERD_BINARY) with adaptive launch counting, half of every 2 s
            period at a random place: `cuda: {launch_counting: adaptive, launch_sample_fraction:
            0.5, launch_sample_period: 2s}`, --log-level debug; its log line `pid P: launch probes
            on from A to B ns (CLOCK_MONOTONIC)` for each closed window gives the on-intervals.
  bare      no daemon: this script starts launch_cost/symhits (one counting uprobe on
            cuLaunchKernel, cuLaunchKernelEx and their _ptsz variants, for the pid, uprobe_multi,
            else perf-event uprobes) for an on-block and stops it after, in blocks of about
            --block seconds (0.75-1.25 x at random); on = from its ATTACHED line to its exit.
  profiler  no probes: the workload itself enters and leaves torch.profiler.profile(activities=
            [CPU, CUDA]) in blocks of about --block seconds (torch_workloads.py
            --profiler-blocks); on = after enter returned to before exit started; enter and exit
            are left out. Not for `raw`.
  exact     as bare, but symhits' probes run the daemon's own launch programs
            (--launch-object, the build's bpf/cuda_launch.bpf.o: launch_handle_arg1, and
            launch_handle_arg2 on the Ex entries) with the daemon's defaults set in it
            (launch_stack_every 1000, capture_stacks 1) and its counting map: what exact mode
            runs per launch, switched on and off inside one process, which the daemon's own
            system-wide probes cannot be. exact − bare is the program's price beyond the trap.

Each chunk is "on" if it lies inside an on-interval shrunk by --settle at both ends, "off" if it
lies inside the stretch between two on-intervals shrunk likewise, else it is left out (it
straddles a transition, overlaps a profiler enter/exit or symhits' start, or lies in the first
--warmup seconds of the chunks). For each on-block with on chunks and off chunks in an
adjacent off-stretch: ratio = mean time per step of its on chunks / mean time per step of the off
chunks of its neighbouring stretches (the few seconds around it, so the host's slow drift
cancels). Reported: the number of blocks n, mean ratio with a 95 % confidence interval (Student t,
n-1 degrees of freedom; the standard error allows for the correlation of neighbouring blocks that
share an off-stretch), its half width in percent (does the run resolve ±1 %?), the median, and
the cost per launch (ratio - 1) x time per step / launches per step, where launches per step are
known: raw 1, eager 2, or counted by the bare toggler's symhits in the same call, or
--launches-per-step.

Several (workload, toggler) pairs run one after the other (workload by workload, togglers in the
order given; profiler never with raw) within --budget-minutes: a pair that would not fit is
skipped and the report says so. Writes OUTDIR/paired.md and OUTDIR/paired.json (rewritten after
each pair), OUTDIR/<workload>-<toggler>/ (logs). Exit status: 0 every pair run gave a ratio, 1
otherwise (or nothing ran), 2 setup error, 130 interrupted. Root for daemon and bare; no other
neutracerd may run. The daemon and symhits run on --daemon-cpus, the workload on --workload-cpus.

--fake: fake.py's daemon (windows logged and a slower workload while they are open), a fake
symhits and fake profiler blocks with sleeping workloads; no GPU, no root. Checks the script.
"""
import argparse
import collections
import dataclasses
import datetime
import json
import math
import os
import platform
import queue
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "gpu"))
from count_error import wait_for  # noqa: E402  (nt_common's)
from nt_common import fetch, parse_prometheus  # noqa: E402

WORKLOADS = ["raw", "eager", "cnn", "transformer"]
TOGGLERS = ["daemon", "bare", "exact", "profiler"]
BASE_CONFIG = ("cuda: {launch_counting: adaptive, launch_sample_fraction: 0.5, "
               "launch_sample_period: 2s}\n")
CONFIG_KEYS = (r"launch_counting\s*:\s*adaptive\b", r"launch_sample_fraction\s*:",
               r"launch_sample_period\s*:")
WINDOW_RE = re.compile(r"pid (\d+): launch probes on from (\d+) to (\d+) ns \(CLOCK_MONOTONIC\)")
LAUNCH_SYMBOLS = "cuLaunchKernel,cuLaunchKernelEx,cuLaunchKernel_ptsz,cuLaunchKernelEx_ptsz"
KNOWN_LAUNCHES = {"raw": 1.0, "eager": 2.0}  # per step: one launch; mul and add
RAW_CHUNK, RAW_WARMUP = 15000, 20000  # 35-75 ms of launches per chunk (2.3-5 µs each)
# Seconds a pair takes beyond --seconds (start-up, hand-shakes, the daemon's stop), until
# measured: then the longest seen so far + 10 %.
OVERHEAD_GUESS = {"daemon": 40.0, "bare": 15.0, "exact": 15.0, "profiler": 20.0}
OVERHEAD_GUESS_FAKE = {"daemon": 4.0, "bare": 2.0, "exact": 2.0, "profiler": 2.0}


class SetupError(Exception):
    pass


class StepError(Exception):
    pass


class Deadline(Exception):
    pass


# ------------------------------------------------------------------------------------------------
# Pure functions (unit-tested in test_bench.py)


def parse_duration(text):
    text = str(text).strip()
    for suffix, scale in (("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    return float(text)


def parse_cpus(spec, nproc=None, allowed=None):
    """'0-1', '2-' (2 .. nproc-1), '0,3-5' -> sorted CPU list within `allowed`; None if empty."""
    nproc = nproc or os.cpu_count() or 1
    cpus = set()
    for part in str(spec).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.update(range(int(lo), int(hi) + 1 if hi.strip() else nproc))
        else:
            cpus.add(int(part))
    if allowed is not None:
        cpus &= set(allowed)
    return sorted(cpus) or None


def daemon_config(extra):
    """(config text, sample period s). extra: YAML added after the built-in adaptive settings;
    one with its own top-level `cuda:` section replaces them and must set the three keys."""
    extra = (extra or "").strip()
    if re.search(r"^cuda\s*:", extra, re.M):
        missing = [k for k in CONFIG_KEYS if not re.search(k, extra)]
        if missing:
            raise SetupError("a --daemon-config with its own `cuda:` section must set "
                             "launch_counting: adaptive, launch_sample_fraction and "
                             "launch_sample_period")
        text = extra + "\n"
    else:
        text = BASE_CONFIG + (extra + "\n" if extra else "")
    m = re.search(r"launch_sample_period\s*:\s*([0-9.]+\s*(?:ms|s|m|h)?)", text)
    return text, parse_duration(m.group(1)) if m else 2.0


def parse_windows(text, pid):
    """The on-intervals (seconds, CLOCK_MONOTONIC) the daemon logged for pid."""
    out = []
    for m in WINDOW_RE.finditer(text):
        if int(m.group(1)) == int(pid):
            out.append((int(m.group(2)) / 1e9, int(m.group(3)) / 1e9))
    return merge_intervals(out)


def merge_intervals(intervals):
    out = []
    for a, b in sorted((float(a), float(b)) for a, b in intervals if b > a):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def chunks_of(result):
    """[(start, end, steps)] from a chunked RESULT (chunk_start, chunk_ends, chunk_steps)."""
    ends = [float(result["chunk_start"])] + [float(e) for e in result["chunk_ends"]]
    steps = int(result["chunk_steps"])
    return [(a, b, steps) for a, b in zip(ends, ends[1:])]


def classify(chunks, on, settle, begin, end, excluded=()):
    """Labels each chunk ("on", k) (inside on-interval k shrunk by settle at both ends), ("off",
    j) (inside off-stretch j, between on-intervals j-1 and j, shrunk likewise) or None, and
    counts the ones left out by reason: before `begin` (warm-up), after `end`, overlapping an
    `excluded` interval widened by settle, or near / across a transition."""
    on = merge_intervals(on)
    bad = merge_intervals([(a - settle, b + settle) for a, b in excluded])
    starts = [a for a, _ in on]
    labels, left = [], collections.Counter()
    for a, b, _ in chunks:
        label = None
        if a < begin:
            left["warm-up"] += 1
        elif b > end:
            left["after the end"] += 1
        elif any(a < y and b > x for x, y in bad):
            left["start/stop of the toggler"] += 1
        else:
            k = sum(1 for s in starts if s <= a)  # on-intervals that began at or before a
            if k and a >= on[k - 1][0] + settle and b <= on[k - 1][1] - settle:
                label = ("on", k - 1)
            else:
                lo = on[k - 1][1] + settle if k else -math.inf
                hi = on[k][0] - settle if k < len(on) else math.inf
                if a >= lo and b <= hi:
                    label = ("off", k)
                else:
                    left["transition"] += 1
        labels.append(label)
    return labels, left


def per_step_ns(chunks):
    return sum(b - a for a, b, _ in chunks) * 1e9 / sum(s for _, _, s in chunks)


def pair_blocks(chunks, labels, on):
    """One entry per on-block with on chunks and off chunks next to it (off-stretch k before
    block k, k+1 after): mean time per step on, off (both neighbours' chunks pooled), ratio."""
    groups = collections.defaultdict(list)
    for c, label in zip(chunks, labels):
        if label:
            groups[label].append(c)
    blocks = []
    for k, (a, b) in enumerate(merge_intervals(on)):
        mine = groups.get(("on", k))
        near = [j for j in (k, k + 1) if groups.get(("off", j))]
        if not mine or not near:
            continue
        offs = [c for j in near for c in groups[("off", j)]]
        on_ns, off_ns = per_step_ns(mine), per_step_ns(offs)
        blocks.append({"block": k, "from": a, "to": b, "on_chunks": len(mine),
                       "off_chunks": len(offs), "off_stretches": near, "on_ns": on_ns,
                       "off_ns": off_ns, "ratio": on_ns / off_ns})
    return blocks


# Two-sided 95 % quantiles of Student's t (df: value); other df interpolated in 1/df.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
        17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064,
        25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000,
        120: 1.980}


def t975(df):
    if df < 1:
        raise ValueError("t needs at least one degree of freedom")
    if df in T975:
        return T975[df]
    if df > 120:
        return 1.960 + (1.980 - 1.960) * 120.0 / df
    keys = sorted(T975)
    hi = next(k for k in keys if k > df)
    lo = max(k for k in keys if k < df)
    w = (1.0 / df - 1.0 / hi) / (1.0 / lo - 1.0 / hi)
    return T975[hi] + w * (T975[lo] - T975[hi])


def ratio_stats(blocks):
    """n, mean, median, standard error and 95 % interval of the blocks' ratios. Neighbouring
    blocks that pool the same off-stretch are positively correlated: the standard error adds
    twice their covariance (estimated from those neighbours, never below zero) to the plain one."""
    r = [b["ratio"] for b in blocks]
    n = len(r)
    out = {"n": n, "mean": None, "median": None, "se": None, "se_plain": None, "ci": None,
           "half_width": None, "half_width_pct": None}
    if not n:
        return out
    mean = statistics.fmean(r)
    out.update(mean=mean, median=statistics.median(r))
    if n < 2:
        return out
    var = statistics.variance(r)
    shared = [(i, i + 1) for i in range(n - 1)
              if blocks[i + 1]["block"] == blocks[i]["block"] + 1
              and blocks[i]["block"] + 1 in blocks[i]["off_stretches"]
              and blocks[i]["block"] + 1 in blocks[i + 1]["off_stretches"]]
    cov = (sum((r[i] - mean) * (r[j] - mean) for i, j in shared) / len(shared)) if shared else 0.0
    se = math.sqrt((n * var + 2 * len(shared) * max(cov, 0.0)) / (n * n))
    half = t975(n - 1) * se
    out.update(se=se, se_plain=math.sqrt(var / n), shared_neighbours=len(shared),
               neighbour_cov=cov, ci=[mean - half, mean + half], half_width=half,
               half_width_pct=100.0 * half / mean)
    return out


def launches_from_hits(chunks, hits):
    """Launches per step from symhits' counts [(from, to, hits)]: each interval's hits over the
    steps it ran, the step rate of the chunks inside it times its length (a chunk cut by the
    attach or detach mixes two rates). Intervals reaching outside the chunks' span (the warm-up
    has launches but no chunk) are not used."""
    if not chunks:
        return None
    first, last = chunks[0][0], chunks[-1][1]
    steps = total = 0.0
    for a, b, h in hits:
        inside = [c for c in chunks if c[0] >= a and c[1] <= b]
        if a < first or b > last or not inside:
            continue
        rate = sum(c[2] for c in inside) / sum(c[1] - c[0] for c in inside)
        steps += rate * (b - a)
        total += h
    return total / steps if steps > 0 and total > 0 else None


def analyse(result, on, excluded, settle, warmup, end=None):
    """Everything about one run that does not depend on launches per step."""
    chunks = chunks_of(result)
    if not chunks:
        return {"chunks": 0, "blocks": [], "stats": ratio_stats([])}
    begin = chunks[0][0] + warmup
    end = chunks[-1][1] if end is None else end
    on = merge_intervals(on)
    labels, left = classify(chunks, on, settle, begin, end, excluded)
    blocks = pair_blocks(chunks, labels, on)
    used_off = set()
    for bl in blocks:
        used_off.update(bl["off_stretches"])
    off_chunks = [c for c, lab in zip(chunks, labels) if lab and lab[0] == "off"
                  and lab[1] in used_off]
    on_chunks = [c for c, lab in zip(chunks, labels) if lab and lab[0] == "on"]
    return {
        "chunks": len(chunks), "chunk_steps": chunks[0][2],
        "on_intervals": len(on), "on_seconds": round(sum(b - a for a, b in on), 3),
        "chunks_on": sum(1 for lab in labels if lab and lab[0] == "on"),
        "chunks_off": sum(1 for lab in labels if lab and lab[0] == "off"),
        "left_out": sum(left.values()), "left_out_by_reason": dict(left),
        "on_ns_per_step": per_step_ns(on_chunks) if on_chunks else None,
        "off_ns_per_step": per_step_ns(off_chunks) if off_chunks else None,
        "blocks": blocks, "stats": ratio_stats(blocks),
    }


def cost_per_launch(stats, off_ns_per_step, launches_per_step):
    """(ratio - 1) x time per step / launches per step, and the same for the interval's ends."""
    if stats.get("mean") is None or not off_ns_per_step or not launches_per_step:
        return None, None
    scale = off_ns_per_step / launches_per_step
    ci = stats.get("ci")
    return ((stats["mean"] - 1) * scale,
            [(ci[0] - 1) * scale, (ci[1] - 1) * scale] if ci else None)


def fill_costs(rows, overrides=None):
    """Launches per step for each workload (--launches-per-step, else raw's 1, else counted by
    symhits in this call, else the known ones) and each row's cost per launch."""
    overrides = overrides or {}
    counted = collections.defaultdict(list)
    for r in rows:
        if r.get("measured_launches_per_step"):
            counted[r["workload"]].append(r["measured_launches_per_step"])
    for r in rows:
        w = r["workload"]
        if w in overrides:
            lps, source = overrides[w], "--launches-per-step"
        elif w == "raw":  # one launch per step by construction
            lps, source = KNOWN_LAUNCHES[w], "known"
        elif counted.get(w):
            lps, source = statistics.median(counted[w]), "counted by symhits"
        elif w in KNOWN_LAUNCHES:
            lps, source = KNOWN_LAUNCHES[w], "known"
        else:
            lps, source = None, None
        r["launches_per_step"], r["launches_per_step_source"] = lps, source
        if r.get("stats"):
            r["cost_ns"], r["cost_ci_ns"] = cost_per_launch(r["stats"], r.get("off_ns_per_step"),
                                                            lps)


def exit_code(report):
    ran = [r for r in report["rows"] if r["status"] != "skipped"]
    if report.get("fatal") or not ran or any(r["status"] != "ok" for r in ran):
        return 1
    return 0


# ------------------------------------------------------------------------------------------------
# Report


def fmt_ns(ns):
    if ns is None:
        return "n/a"
    a = abs(ns)
    if a >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if a >= 1e3:
        return f"{ns / 1e3:.3f} µs"
    return f"{ns:.1f} ns"


def fmt_cost(value, ci):
    if value is None:
        return "n/a"
    text = f"{value:+.0f} ns"
    return text + (f" [{ci[0]:+.0f}, {ci[1]:+.0f}]" if ci else "")


def table(rows):
    out = ["| workload | toggler | blocks | ratio mean [95 % CI] | ± half width | median | "
           "time per step (off) | launches per step | cost per launch [95 % CI] | "
           "chunks on / off / left out | note |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        st = r.get("stats") or {}
        if r.get("status") == "skipped" or st.get("mean") is None:
            note = (r.get("error") or ("skipped" if r.get("status") == "skipped" else "")
                    or r.get("note") or "no ratio")
            out.append(f"| {r['workload']} | {r['toggler']} | {st.get('n', 0)} | n/a | n/a | n/a "
                       f"| {fmt_ns(r.get('off_ns_per_step'))} | n/a | n/a | "
                       f"{r.get('chunks_on', 0)} / {r.get('chunks_off', 0)} / "
                       f"{r.get('left_out', 0)} | {note.replace('|', '/')} |")
            continue
        ci = st.get("ci")
        ratio = f"{st['mean']:.4f}" + (f" [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else "")
        half = "n/a" if st.get("half_width_pct") is None else (
            f"±{st['half_width_pct']:.2f} %" + (" (≤ 1 %)" if st["half_width_pct"] <= 1 else ""))
        lps = r.get("launches_per_step")
        lps_text = "n/a" if not lps else f"{lps:.2f} ({r['launches_per_step_source']})"
        note = r.get("note") or ""
        out.append(f"| {r['workload']} | {r['toggler']} | {st['n']} | {ratio} | {half} | "
                   f"{st['median']:.4f} | {fmt_ns(r.get('off_ns_per_step'))} | {lps_text} | "
                   f"{fmt_cost(r.get('cost_ns'), r.get('cost_ci_ns'))} | "
                   f"{r.get('chunks_on', 0)} / {r.get('chunks_off', 0)} / {r.get('left_out', 0)} "
                   f"| {note} |")
    return out


def daemon_vs_bare(rows):
    """Per workload: the daemon's and the exact program's cost per launch minus the bare trap's
    (target ≤ 100 ns)."""
    out = []
    by = {(r["workload"], r["toggler"]): r for r in rows}
    for w in WORKLOADS:
        b = by.get((w, "bare"))
        for toggler in ("daemon", "exact"):
            d = by.get((w, toggler))
            if not d or not b or d.get("cost_ns") is None or b.get("cost_ns") is None:
                continue
            diff = d["cost_ns"] - b["cost_ns"]
            halves = [abs(x["cost_ci_ns"][1] - x["cost_ns"]) for x in (d, b)
                      if x.get("cost_ci_ns")]
            half = math.sqrt(sum(h * h for h in halves)) if len(halves) == 2 else None
            out.append(f"- {w}: {toggler} − bare = {diff:+.0f} ns per launch"
                       + (f" (± {half:.0f} ns, the two intervals' half widths combined)" if half
                          else "") + (" — within the 100 ns target" if diff <= 100 else
                                      " — **above the 100 ns target**"))
    return out


def profiler_baseline(rows):
    """Off time per step of each profiler row against another row of the workload: once entered,
    the profiler leaves CUPTI set up, so its off chunks are not a never-profiled process."""
    out = []
    for w in WORKLOADS:
        prof = next((r for r in rows if r["workload"] == w and r["toggler"] == "profiler"
                     and r.get("off_ns_per_step")), None)
        other = next((r for t in ("bare", "exact", "daemon") for r in rows if r["workload"] == w
                      and r["toggler"] == t and r.get("off_ns_per_step")), None)
        if prof and other:
            times = prof["off_ns_per_step"] / other["off_ns_per_step"]
            out.append(f"- {w}: off time per step {fmt_ns(prof['off_ns_per_step'])} with the "
                       f"profiler used before, {fmt_ns(other['off_ns_per_step'])} in the "
                       f"{other['toggler']} run ({times:.2f} x; separate processes, drift "
                       "included)")
    return out


def render(report):
    s = report["settings"]
    out = ["# Paired on/off cost inside one workload process", ""]
    if s.get("fake"):
        out += ["**FAKE RUN**: fake.py stand-ins (sleeping workloads, fake daemon, fake symhits, "
                "fake profiler blocks); the numbers mean nothing.", ""]
    out += [f"- date: {report.get('started', '?')}; wall time "
            f"{(report.get('wall_s') or 0) / 60:.1f} min of a {s['budget_minutes']} min budget; "
            f"host {report.get('host', '?')} ({report.get('nproc', '?')} CPUs)",
            f"- each pair: one process for {s['seconds']:g} s; the first {s['warmup']:g} s of "
            f"its chunks left out, and {s['settle']:g} s after every on/off transition; bare and "
            f"profiler blocks of about {s['block']:g} s",
            f"- daemon and symhits on CPUs {s.get('daemon_cpus') or 'any'}, the workload on "
            f"{s.get('workload_cpus') or 'any'}",
            f"- daemon config: `{s.get('config_text', '').strip()}`", ""]
    out += table(report["rows"])
    extra = daemon_vs_bare(report["rows"])
    if extra:
        out += ["", "The daemon's sampled-window probes (daemon) and its exact-mode launch program "
                "(exact) against one bare counting uprobe on the same entries (target: ≤ bare + "
                "100 ns per launch):", ""] + extra
    extra = profiler_baseline(report["rows"])
    if extra:
        out += ["", "The profiler's off stretches follow its first block: CUPTI stays set up, so "
                "its ratio is the cost of recording over a process that has used the profiler:",
                ""] + extra
    out += ["", "Ratio: for each on-block, its on chunks' mean time per step over the off chunks' "
            "of the off-stretches on either side; mean over the blocks with a 95 % interval "
            "(Student t; the standard error allows for neighbouring blocks sharing an "
            "off-stretch). ± half width: the interval's half width in % of the mean (±1 % is "
            "resolved when it is ≤ 1 %). Cost per launch: (ratio − 1) × time per step ÷ "
            "launches per step. Chunks: used on / used off / left out (warm-up, transitions, the "
            "toggler's start and stop)."]
    left = [(r, r.get("left_out_by_reason")) for r in report["rows"] if r.get("left_out_by_reason")]
    if left:
        out += ["", "Chunks left out, by reason:", ""]
        for r, reasons in left:
            out.append(f"- {r['workload']} / {r['toggler']}: " + ", ".join(
                f"{k} {v}" for k, v in sorted(reasons.items())))
    if report.get("skipped"):
        out += ["", "Skipped: " + "; ".join(report["skipped"])]
    if report.get("fatal"):
        out += ["", f"**Stopped: {report['fatal']}**"]
    out += ["", f"Command: `{report.get('command', '')}`", ""]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------
# Processes


def touch(path):
    with open(path, "w"):
        pass


def tail(path, lines=4):
    try:
        with open(path, errors="replace") as f:
            return " | ".join(line.rstrip() for line in f.readlines()[-lines:])
    except OSError:
        return ""


def pinned(cmd, cpus):
    """(command, preexec_fn) that run cmd on cpus: through taskset where there is one (the
    affinity is set before the program's first instruction, so every thread inherits it)."""
    if not cpus:
        return cmd, None
    taskset = shutil.which("taskset")
    if taskset:
        return [taskset, "-c", ",".join(map(str, cpus))] + cmd, None
    return cmd, lambda: os.sched_setaffinity(0, cpus)


class Proc:
    """A child with its stdout lines (and their arrival times) in a queue and a log file."""

    def __init__(self, cmd, env, log_base, cpus=None):
        self.cmd = cmd
        self.stdout_path, self.stderr_path = log_base + ".stdout", log_base + ".stderr"
        self._err = open(self.stderr_path, "w")
        self.lines = queue.Queue()
        full, preexec = pinned(cmd, cpus)
        try:
            self.proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=self._err,
                                         stdin=subprocess.DEVNULL, text=True, env=env,
                                         start_new_session=True, preexec_fn=preexec)
        except OSError as exc:
            self._err.close()
            raise StepError(f"cannot start {cmd[0]}: {exc}")
        self.pid = self.proc.pid
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        with open(self.stdout_path, "w") as copy:
            for raw in iter(self.proc.stdout.readline, ""):
                copy.write(raw)
                copy.flush()
                self.lines.put((time.monotonic(), raw.rstrip("\n")))
        self.lines.put((time.monotonic(), None))

    def take(self, prefix, timeout):
        """(arrival time, rest) of the next stdout line starting with prefix within timeout, or
        None; StepError if the process ended first."""
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            left = deadline - time.monotonic()
            try:
                t, line = self.lines.get(timeout=max(min(left, 0.5), 0.001))
            except queue.Empty:
                if left <= 0:
                    return None
                continue
            if line is None:
                self.lines.put((t, None))
                try:
                    rc = self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    rc = "?"
                raise StepError(f"{os.path.basename(self.cmd[0])} ended (status {rc}) before "
                                f"'{prefix}' (stderr: {tail(self.stderr_path)})")
            if line.startswith(prefix):
                return t, line[len(prefix):].strip()

    def block(self, timeout):
        """The lines after a FINAL / SNAPSHOT head up to END (symhits)."""
        deadline = time.monotonic() + timeout
        lines = []
        while True:
            try:
                _, line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise StepError(f"no END from {os.path.basename(self.cmd[0])} within "
                                f"{timeout:.0f} s")
            if line is None or line == "END":
                return lines
            lines.append(line)

    def expect(self, prefix, timeout):
        got = self.take(prefix, timeout)
        if got is None:
            raise StepError(f"no '{prefix}' from {os.path.basename(self.cmd[0])} within "
                            f"{timeout:.0f} s (stderr: {tail(self.stderr_path)})")
        return got

    def signal(self, sig):
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(sig)
            except OSError:
                pass

    def wait(self, timeout):
        try:
            rc = self.proc.wait(timeout=max(timeout, 0.1))
        except subprocess.TimeoutExpired:
            raise StepError(f"{os.path.basename(self.cmd[0])} did not exit within "
                            f"{timeout:.0f} s")
        self._reader.join(timeout=5)
        return rc

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self._err.close()


@dataclasses.dataclass
class Settings:
    """What run_matrix needs; paired.py's command line and run.py --method paired fill it."""
    outdir: str
    daemon_cmd: list = None          # [binary] or fake.py daemon; the rest is added
    daemon_env: dict = None
    cuda_cmd: list = None            # nt_cuda_bench (raw), or fake.py cuda
    symhits_cmd: list = None         # launch_cost/symhits, or fake.py symhits
    launch_object: str = ""          # exact toggler: the daemon's cuda_launch.bpf.o
    python: str = sys.executable
    workload_env: dict = None
    port: int = 19559
    extra_config: str = ""
    seconds: float = 40.0
    block: float = 1.0
    settle: float = 0.25
    warmup: float = 6.0
    daemon_cpus: list = None
    workload_cpus: list = None
    bare_mode: str = "multi"
    chunks: dict = dataclasses.field(default_factory=dict)
    launches_per_step: dict = dataclasses.field(default_factory=dict)
    fake: bool = False
    seed: int = None
    budget_minutes: float = 9.0
    deadline: float = None           # time.monotonic() value; from budget_minutes if None
    ready_timeout: float = 180.0
    stop_timeout: float = 90.0
    command: str = ""

    def __post_init__(self):
        self.config_text, self.period = daemon_config(self.extra_config)
        if self.deadline is None:
            self.deadline = time.monotonic() + self.budget_minutes * 60
        self.rng = random.Random(self.seed)

    def limit(self, timeout):
        left = self.deadline - time.monotonic()
        if left <= 0.5:
            raise Deadline(f"the {self.budget_minutes:g} min budget is spent")
        return min(timeout, left)

    def public(self):
        keep = ("seconds", "block", "settle", "warmup", "daemon_cpus", "workload_cpus",
                "bare_mode", "chunks", "launches_per_step", "fake", "seed", "budget_minutes",
                "port", "config_text", "period")
        return {k: getattr(self, k) for k in keep}


def scrape(port):
    try:
        return parse_prometheus(fetch(f"http://127.0.0.1:{port}/metrics", timeout=2))
    except (RuntimeError, ValueError):
        return None


def libcuda_of(pid):
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if os.path.basename(path).startswith("libcuda.so"):
                return path
    raise StepError(f"pid {pid} has no libcuda.so mapped")


def workload_cmd(s, workload, toggler, sync):
    timeout = "900"
    chunk = s.chunks.get(workload)
    if workload == "raw":
        if not s.cuda_cmd:
            raise StepError("no nt_cuda_bench for the raw workload")
        return s.cuda_cmd + ["chunked", f"{s.seconds:g}", str(chunk or RAW_CHUNK),
                             str(RAW_WARMUP), sync, timeout]
    cmd = [s.python, "-u", os.path.join(HERE, "torch_workloads.py"), workload, "--condition",
           "plain" if toggler == "profiler" else "neutracerd", "--sync-dir", sync, "--seconds",
           f"{s.seconds:g}", "--timeout", timeout]
    if chunk:
        cmd += ["--chunk", str(chunk)]
    if toggler == "profiler":
        cmd += ["--profiler-blocks", f"{s.block:g}"]
    return cmd + (["--fake"] if s.fake else [])


class DaemonRun:
    """neutracerd (or fake.py's) for one pair, on the daemon CPUs, logging at debug level."""

    def __init__(self, s, folder):
        self.s = s
        self.config_path = os.path.join(folder, "daemon.yaml")
        with open(self.config_path, "w") as f:
            f.write(s.config_text)
        self.log_path = os.path.join(folder, "daemon.log")
        cmd = s.daemon_cmd + ["--config", self.config_path, "--listen", f"127.0.0.1:{s.port}",
                              "--scan-interval", "500ms", "--log-level", "debug"]
        full, preexec = pinned(cmd, s.daemon_cpus)
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(full, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=s.daemon_env,
                                         start_new_session=True, preexec_fn=preexec)
        self.cmd = full

    def wait_listed(self, pid, timeout):
        def listed():
            if self.proc.poll() is not None:
                raise StepError(f"the daemon exited with status {self.proc.returncode} "
                                f"({tail(self.log_path)})")
            samples = scrape(self.s.port)
            return samples and any(l.get("pid") == str(pid) for _, l, _ in samples)
        try:
            wait_for(listed, timeout, f"the daemon to list pid {pid} in /metrics")
        except RuntimeError as exc:
            raise StepError(f"{exc} ({tail(self.log_path)})")

    def stop(self):
        """SIGTERM; SIGKILL when it has not exited after --stop-timeout or, near the budget's
        end, 15 s (the kernel removes a killed daemon's probes with its file descriptors)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            wait = min(self.s.stop_timeout, max(self.s.deadline - time.monotonic(), 15.0))
            try:
                self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                self.proc.wait(timeout=30)
                return "killed after SIGTERM timed out"
        return None

    def windows(self, pid):
        with open(self.log_path, errors="replace") as f:
            return parse_windows(f.read(), pid)


def exact_program_args(s):
    """symhits arguments that make its probes run the daemon's launch programs (exact toggler)."""
    return ["--object", s.launch_object, "--prog", "launch_handle_arg1", "--prog-ex",
            "launch_handle_arg2", "--set", "launch_stack_every=1000", "--set", "capture_stacks=1"]


def bare_blocks(s, wl, pid, lib, folder, row, program_args=()):
    """Alternates blocks without and with symhits on the pid until the workload's RESULT.
    Returns (result line, on-intervals, excluded intervals, [(from, to, hits)])."""
    on, excluded, hits = [], [], []
    mode = s.bare_mode
    n = 0

    def length():
        return s.block * s.rng.uniform(0.75, 1.25)

    while True:
        got = wl.take("RESULT", s.limit(length()))  # a block without probes
        if got:
            return got, on, excluded, hits
        n += 1
        t_spawn = time.monotonic()
        cmd = s.symhits_cmd + ["--lib", lib, "--sym", LAUNCH_SYMBOLS, "--pid", str(pid),
                               "--" + mode] + list(program_args)
        sh = Proc(cmd, s.workload_env, os.path.join(folder, f"symhits-{n}"), cpus=s.daemon_cpus)
        try:
            try:
                t_on, _ = sh.expect("ATTACHED", s.limit(60))
            except StepError as exc:
                if mode != "multi" or n > 1:
                    raise
                row["note"] = f"uprobe_multi refused ({exc}); perf-event uprobes"
                sh.kill()
                mode = "perf"
                excluded.append((t_spawn, time.monotonic()))
                continue
            got = wl.take("RESULT", s.limit(length()))  # the block with probes
            sh.signal(signal.SIGINT)
            t_final, rest = sh.expect("FINAL", s.limit(60))  # counted until then
            stamp = rest.split()[-1] if rest.split() else ""
            if stamp.isdigit() and abs(int(stamp) / 1e9 - t_final) < 1.0:
                t_final = int(stamp) / 1e9  # "FINAL 0 <CLOCK_MONOTONIC ns>" as it read the map
            count = sum(int(line.split(" ", 1)[0]) for line in sh.block(s.limit(30))
                        if line.split(" ", 1)[0].isdigit())
            rc = sh.wait(s.limit(60))
            t_off = time.monotonic()
            if rc != 0:
                raise StepError(f"symhits exited with status {rc} ({tail(sh.stderr_path)})")
        finally:
            sh.kill()
        on.append((t_on, t_off))
        excluded.append((t_spawn, t_on))
        hits.append((t_on, t_final, count))
        row["bare_mode"] = mode
        if got:
            return got, on, excluded, hits


def run_pair(s, workload, toggler, log):
    """One workload process and one toggler; returns the report row."""
    row = {"workload": workload, "toggler": toggler, "status": "error", "error": None}
    folder = os.path.join(s.outdir, f"{workload}-{toggler}")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    sync = tempfile.mkdtemp(prefix="nt_paired_")
    t0 = time.monotonic()
    wl = daemon = None
    try:
        wl = Proc(workload_cmd(s, workload, toggler, sync), s.workload_env,
                  os.path.join(folder, "workload"), cpus=s.workload_cpus)
        _, rest = wl.expect("READY", s.limit(s.ready_timeout))
        pid = int(rest.split()[0])
        row["pid"] = pid
        lib = None
        if toggler == "daemon":
            daemon = DaemonRun(s, folder)
            daemon.wait_listed(pid, s.limit(60))
        elif toggler in ("bare", "exact"):
            lib = "fake-libcuda.so.1" if s.fake else libcuda_of(pid)
            row["libcuda"] = lib
        touch(os.path.join(sync, "go"))
        log(f"{workload} / {toggler}: pid {pid} running for {s.seconds:g} s")
        on, excluded, hits = [], [], []
        if toggler in ("bare", "exact"):
            got, on, excluded, hits = bare_blocks(
                s, wl, pid, lib, folder, row, exact_program_args(s) if toggler == "exact" else ())
        else:
            got = wl.expect("RESULT", s.limit(s.seconds + 300))
        try:
            result = json.loads(got[1])
        except ValueError:
            raise StepError(f"RESULT is not JSON: {got[1][:200]!r}")
        if "chunk_ends" not in result:
            raise StepError("RESULT has no chunk_ends (not the chunked mode?)")
        if daemon is not None:
            time.sleep(min(s.period + 1.0, max(s.deadline - time.monotonic() - 1, 0)))
            row["daemon_stop"] = daemon.stop()
            on = daemon.windows(pid)
            if not on:
                raise StepError("no `launch probes on from ... to ... ns` line for the pid in "
                                f"{daemon.log_path} (debug log of the windows missing?)")
        elif toggler == "profiler":
            on, excluded = result.get("profiler_on", []), result.get("profiler_busy", [])
            row["profiler"] = result.get("profiler")
        touch(os.path.join(sync, "release"))
        rc = wl.wait(s.limit(120))
        if rc != 0:
            raise StepError(f"workload exited with status {rc} ({tail(wl.stderr_path)})")
        row.update(analyse(result, on, excluded, s.settle, s.warmup))
        row["measured_launches_per_step"] = (launches_from_hits(chunks_of(result), hits)
                                             if hits else None)
        row["symhits_blocks"] = len(hits) if toggler in ("bare", "exact") else None
        row["value"], row["unit"] = result.get("value"), result.get("unit")
        row["status"] = "ok" if row["stats"]["mean"] is not None else "no ratio"
        if row["status"] != "ok":
            row["error"] = (f"no on-block with usable chunks next to off chunks ({row['chunks']} "
                            f"chunks, {row['on_intervals']} on-intervals)")
    except (StepError, OSError, ValueError) as exc:
        row["error"] = str(exc)
    except Deadline as exc:
        row["error"] = str(exc)
        row["deadline"] = True
    finally:
        if daemon is not None and daemon.proc.poll() is None:
            daemon.stop()
        if wl is not None:
            wl.kill()
        shutil.rmtree(sync, ignore_errors=True)
        row["wall_s"] = round(time.monotonic() - t0, 1)
        row["overhead_s"] = round(row["wall_s"] - s.seconds, 1)
    return row


def run_matrix(s, workloads, togglers, log=print, on_row=None):
    """Every (workload, toggler) pair in turn within the budget. Returns the report dict."""
    os.makedirs(s.outdir, exist_ok=True)
    report = {"schema": 1, "started": datetime.datetime.now().astimezone().isoformat(
        timespec="seconds"), "host": platform.node(), "nproc": os.cpu_count(),
        "settings": s.public(), "command": s.command, "rows": [], "skipped": [], "fatal": None}
    t0 = time.monotonic()
    guess = dict(OVERHEAD_GUESS_FAKE if s.fake else OVERHEAD_GUESS)
    seen = collections.defaultdict(list)

    def save():
        report["wall_s"] = round(time.monotonic() - t0, 1)
        fill_costs(report["rows"], s.launches_per_step)
        if on_row:
            on_row(report)

    pairs = [(w, t) for w in workloads for t in togglers if not (w == "raw" and t == "profiler")]
    try:
        for w, t in pairs:
            over = 1.1 * max(seen[t]) if seen[t] else guess[t]
            need = s.seconds + over
            left = s.deadline - time.monotonic()
            if need > left:
                why = (f"{w} / {t}: needs about {need:.0f} s, {max(left, 0):.0f} s of the "
                       f"budget left")
                report["skipped"].append(why)
                report["rows"].append({"workload": w, "toggler": t, "status": "skipped",
                                       "error": "skipped: over the budget", "stats": None})
                log("skipped " + why)
                save()
                continue
            row = run_pair(s, w, t, log)
            if row["status"] == "ok":
                seen[t].append(max(row["overhead_s"], 0))
            report["rows"].append(row)
            st = row.get("stats") or {}
            log(f"{w} / {t}: {row['status']}"
                + (f", ratio {st['mean']:.4f} over {st['n']} blocks"
                   + (f" ±{st['half_width_pct']:.2f} %" if st.get("half_width_pct") else "")
                   if st.get("mean") else "") + (f" ({row['error']})" if row.get("error") else "")
                + f" in {row['wall_s']:.0f} s")
            save()
            if row.get("deadline"):
                raise Deadline(row["error"])
    except Deadline as exc:
        report["fatal"] = str(exc)
        log(f"stopped: {exc}")
    except KeyboardInterrupt as exc:
        report["fatal"] = f"interrupted ({exc})"
        save()
        raise
    save()
    return report


def write_report(outdir, report):
    tmp = os.path.join(outdir, "paired.json.tmp")
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, os.path.join(outdir, "paired.json"))
    with open(os.path.join(outdir, "paired.md"), "w") as f:
        f.write(render(report))


# ------------------------------------------------------------------------------------------------
# Command line


def other_neutracerds():
    import run  # noqa: PLC0415 - run.py imports this module; imported here to avoid a cycle
    return run.other_daemons()


def port_busy(port):
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def build_raw(outdir, nvcc):
    """nt_cuda_bench as run.py builds it (nvcc -O2 -cudart static -arch=native, else sm_90)."""
    import run  # noqa: PLC0415
    nvcc = next((c for c in (nvcc, shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc")
                 if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)
    if not nvcc:
        raise SetupError("nvcc not found (PATH, /usr/local/cuda/bin or --nvcc); or pass "
                         "--cuda-bench")
    out = os.path.join(outdir, "build", "nt_cuda_bench")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    ok, attempts = run.build_cuda(nvcc, os.path.join(HERE, "cuda_bench.cu"), out,
                                  [os.environ.get("NT_NVCC_ARCH"), "-arch=native", "-arch=sm_90"])
    if not ok:
        raise SetupError("nvcc failed: " + " || ".join(a["output"][-300:] for a in attempts))
    return out


def key_values(items, cast):
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        if key not in WORKLOADS or not value:
            raise SetupError(f"expected WORKLOAD=VALUE with a workload of {WORKLOADS}: {item!r}")
        out[key] = cast(value)
    return out


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary", help="neutracerd (its folder's lib/ goes on LD_LIBRARY_PATH); "
                   "ignored with --fake")
    p.add_argument("outdir")
    p.add_argument("--workloads", "--workload", default="eager",
                   help=f"comma-separated, of {','.join(WORKLOADS)} (default eager)")
    p.add_argument("--togglers", "--toggler", default="daemon",
                   help=f"comma-separated, of {','.join(TOGGLERS)} (default daemon)")
    p.add_argument("--seconds", type=float, default=40.0, help="each workload process's run")
    p.add_argument("--block", type=float, default=1.0,
                   help="bare and profiler blocks: about this long (0.75-1.25 x at random)")
    p.add_argument("--settle", type=float, default=0.25,
                   help="seconds left out after every on/off transition")
    p.add_argument("--warmup", type=float, default=6.0,
                   help="seconds left out at the start of the chunks (discovery and the "
                   "daemon's first, exactly counted period)")
    p.add_argument("--daemon-cpus", default="0-1")
    p.add_argument("--workload-cpus", default="2-", help="'2-': 2 .. the last CPU")
    p.add_argument("--daemon-config", default="",
                   help="YAML (or a file holding it) added to the daemon's config after "
                   f"{BASE_CONFIG.strip()!r}; with its own top-level cuda: section it replaces "
                   "that line and must set launch_counting: adaptive, launch_sample_fraction "
                   "and launch_sample_period itself")
    p.add_argument("--port", type=int, default=19559)
    p.add_argument("--symhits", default=os.path.join(HERE, "launch_cost", "symhits"),
                   help="launch_cost/symhits (make there)")
    p.add_argument("--launch-object", help="exact toggler: the daemon's cuda_launch.bpf.o "
                   "(default: bpf/cuda_launch.bpf.o beside the binary)")
    p.add_argument("--bare-mode", choices=["multi", "perf"], default="multi",
                   help="symhits' uprobes: one uprobe_multi link (falls back to perf-event "
                   "uprobes when refused) or perf-event uprobes")
    p.add_argument("--cuda-bench", help="a built nt_cuda_bench (default: built with nvcc)")
    p.add_argument("--nvcc")
    p.add_argument("--python", default=sys.executable, help="interpreter with torch")
    p.add_argument("--chunk", action="append", default=[], metavar="WORKLOAD=N",
                   help="steps per chunk (default: raw 15000, eager 4000, cnn 20, transformer 4)")
    p.add_argument("--launches-per-step", action="append", default=[], metavar="WORKLOAD=N",
                   help="for the cost per launch (known: raw 1, eager 2; bare counts them)")
    p.add_argument("--budget-minutes", type=float, default=9.0,
                   help="hard limit: pairs that would not fit are skipped (default 9)")
    p.add_argument("--seed", type=int, help="for the bare blocks' lengths")
    p.add_argument("--fake", action="store_true", help="stand-ins of fake.py; no GPU, no root")
    args = p.parse_args(argv)
    args.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    args.togglers = [t.strip() for t in args.togglers.split(",") if t.strip()]
    if not args.workloads or set(args.workloads) - set(WORKLOADS):
        p.error(f"--workloads takes some of {WORKLOADS}")
    if not args.togglers or set(args.togglers) - set(TOGGLERS):
        p.error(f"--togglers takes some of {TOGGLERS}")
    if args.seconds <= args.warmup:
        p.error("--seconds must be longer than --warmup")
    return args


def settings_from_args(args, state_dir):
    extra = args.daemon_config
    if extra and os.path.isfile(extra):
        with open(extra) as f:
            extra = f.read()
    allowed = os.sched_getaffinity(0)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    daemon_env = dict(os.environ)
    if args.fake:
        env["NT_BENCH_FAKE_STATE"] = daemon_env["NT_BENCH_FAKE_STATE"] = state_dir
        fake = [sys.executable, os.path.join(HERE, "fake.py")]
        daemon_cmd, symhits_cmd, cuda_cmd = fake + ["daemon"], fake + ["symhits"], fake + ["cuda"]
        launch_object = "fake-cuda_launch.bpf.o"
    else:
        daemon_cmd = [os.path.abspath(args.binary)]
        lib = os.path.join(os.path.dirname(daemon_cmd[0]), "lib")
        if os.path.isdir(lib):
            daemon_env["LD_LIBRARY_PATH"] = lib + ":" + daemon_env.get("LD_LIBRARY_PATH", "")
        symhits_cmd = [os.path.abspath(args.symhits)]
        launch_object = os.path.abspath(args.launch_object or os.path.join(
            os.path.dirname(daemon_cmd[0]), "bpf", "cuda_launch.bpf.o"))
        cuda_cmd = [os.path.abspath(args.cuda_bench)] if args.cuda_bench else None
    return Settings(
        outdir=os.path.abspath(args.outdir), daemon_cmd=daemon_cmd, daemon_env=daemon_env,
        cuda_cmd=cuda_cmd, symhits_cmd=symhits_cmd, launch_object=launch_object,
        python=args.python, workload_env=env,
        port=args.port, extra_config=extra, seconds=args.seconds, block=args.block,
        settle=args.settle, warmup=args.warmup,
        daemon_cpus=parse_cpus(args.daemon_cpus, allowed=allowed),
        workload_cpus=parse_cpus(args.workload_cpus, allowed=allowed), bare_mode=args.bare_mode,
        chunks=key_values(args.chunk, int),
        launches_per_step=key_values(args.launches_per_step, float), fake=args.fake,
        seed=args.seed, budget_minutes=args.budget_minutes,
        command=" ".join([os.path.relpath(__file__, os.getcwd())] + sys.argv[1:]))


def check_setup(s, args):
    if port_busy(s.port):
        raise SetupError(f"something listens on 127.0.0.1:{s.port}; stop it or pass --port")
    if s.fake:
        return
    if set(args.togglers) & {"daemon", "bare", "exact"} and os.geteuid() != 0:
        raise SetupError("the daemon, bare and exact togglers attach uprobes: run as root")
    if "daemon" in args.togglers and not os.access(s.daemon_cmd[0], os.X_OK):
        raise SetupError(f"{s.daemon_cmd[0]} is not an executable file")
    if "exact" in args.togglers and not os.path.isfile(s.launch_object):
        raise SetupError(f"{s.launch_object} is missing: pass --launch-object (the build's "
                         "bpf/cuda_launch.bpf.o)")
    if set(args.togglers) & {"bare", "exact"} and not os.access(s.symhits_cmd[0], os.X_OK):
        raise SetupError(f"{s.symhits_cmd[0]} is missing: make -C tests/bench/gpu/launch_cost "
                         "symhits")
    others = other_neutracerds()
    if others:
        raise SetupError(f"another neutracerd runs (pid {others}): it would trace the off "
                         "stretches; stop it first")
    if "raw" in args.workloads and not s.cuda_cmd:
        s.cuda_cmd = [build_raw(s.outdir, args.nvcc)]


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.makedirs(args.outdir, exist_ok=True)
    t0 = time.monotonic()

    def log(message):
        print(f"[paired +{time.monotonic() - t0:4.0f}s] {message}", flush=True)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    state_dir = tempfile.mkdtemp(prefix="nt_paired_fake_") if args.fake else None
    try:
        try:
            s = settings_from_args(args, state_dir)
            check_setup(s, args)
        except SetupError as exc:
            log(f"setup error: {exc}")
            return 2
        if not s.workload_cpus or not s.daemon_cpus:
            log(f"note: CPUs not pinned (daemon {s.daemon_cpus}, workload {s.workload_cpus} "
                f"of {sorted(os.sched_getaffinity(0))})")
        status = 0
        try:
            report = run_matrix(s, args.workloads, args.togglers, log,
                                on_row=lambda rep: write_report(s.outdir, rep))
        except KeyboardInterrupt as exc:
            log(f"interrupted ({exc})")
            return 130
        write_report(s.outdir, report)
        print(render(report))
        status = exit_code(report)
        log(f"wrote {s.outdir}/paired.md and paired.json; exit status {status}")
        return status
    finally:
        if state_dir:
            shutil.rmtree(state_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
