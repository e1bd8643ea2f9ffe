#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""GPU benchmark of neutracerd's cost on real workloads, against no tool and torch.profiler,
and a leak comparison with compute-sanitizer.

    python3 tests/bench/gpu/run.py NEUTRACERD_BINARY OUTDIR [--reps 3] [--quick] [--dry-run]

Run as root on a GPU host (PyTorch, nvcc). Writes OUTDIR/bench.json (every raw sample) and
OUTDIR/bench.md (tables), and logs of every process under OUTDIR/logs/. See README.md here.

Each round runs three phases, in this order: plain (no daemon), neutracerd (one daemon started
for the phase, stopped after it) and profiler (no daemon; the timed loop inside
torch.profiler.profile). Each phase runs every workload once, each in a fresh process, so each
workload's runs alternate plain, neutracerd, profiler, plain, ... After the rounds, the leak
section runs a program that keeps 100 x 4 MiB of cudaMalloc memory with no tool, under
neutracerd and under compute-sanitizer.

Exit status: 0 all runs succeeded and the daemon counted the raw loop's launches exactly and
reported the leak; 1 otherwise (the reports say what); 2 setup error (not root, binary missing,
port busy, another neutracerd running, nvcc failed).

--method paired replaces the rounds of fresh processes by paired.py's measurement: for each
workload one process per toggler (daemon, bare, profiler), probes switched on and off inside it,
each on-block compared with the off stretches next to it (ratio with a 95 % interval that can
resolve 1 % on a host whose separate runs drift 15-25 %). The leak section is unchanged.

--dry-run replaces the GPU programs, the daemon and compute-sanitizer by the stand-ins of
fake.py (CPU sleeps, a fake HTTP daemon): it needs neither root nor a GPU and checks the
orchestration, the reports and the exit status. --standin DIR does the same with the real
daemon and the stand-in driver of tests/standin (root), so that the launch count and the leak
report come from neutracerd itself.
"""
import argparse
import collections
import contextlib
import datetime
import json
import math
import os
import platform
import queue
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
sys.path.insert(0, os.path.join(REPO, "tests", "gpu"))
from nt_common import fetch, parse_prometheus  # noqa: E402

sys.path.insert(0, HERE)
import paired  # noqa: E402

CONDITIONS = ["plain", "neutracerd", "profiler"]
WORKLOAD_ORDER = ["raw", "eager", "cnn", "transformer"]
UNITS = {"raw": "ns/launch", "eager": "µs/iter", "cnn": "ms/step", "transformer": "ms/step"}
LAUNCHES = "neutracer_cuda_kernel_launches_total"
EXITS = "neutracer_cuda_exits_holding_memory_total"
EXIT_BYTES = "neutracer_cuda_memory_held_at_exit_bytes_total"
MiB = 1 << 20

# Sizes: (full defaults, --quick).
SIZES = {
    "launches": (1_000_000, 200_000),
    "launch_warmup": (20_000, 5_000),
    "eager_iters": (20_000, 5_000),
    "eager_warmup": (1_000, 200),
    "cnn_steps": (200, 50),
    "cnn_warmup": (20, 5),
    "tf_steps": (50, 10),
    "tf_warmup": (10, 3),
    "reps": (3, 1),
}

HOLDER_CODE = """
import ctypes, sys
ctypes.CDLL("libcuda.so.1")
print("HOLD", flush=True)
sys.stdin.read()
"""

TORCH_PROBE = """
import json, sys
info = {}
try:
    import torch
    info["torch"] = torch.__version__
    info["torch_cuda"] = torch.version.cuda
    info["cudnn"] = torch.backends.cudnn.version()
    info["cuda_available"] = torch.cuda.is_available()
    if torch.cuda.is_available():
        info["device"] = torch.cuda.get_device_name(0)
        x = torch.ones(1 << 20, device="cuda")
        info["warmup_sum"] = float((x * 2).sum().item())
        del x
except Exception as exc:
    info["error"] = f"{type(exc).__name__}: {exc}"
try:
    import triton
    info["triton"] = triton.__version__
except Exception:
    pass
print(json.dumps(info))
"""


class SetupError(Exception):
    pass


class StepError(Exception):
    pass


class Deadline(Exception):
    pass


def now_iso():
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def touch(path):
    with open(path, "w"):
        pass


def tail(path, lines=6):
    try:
        with open(path, "r", errors="replace") as f:
            return " | ".join(line.rstrip() for line in f.readlines()[-lines:])
    except OSError:
        return ""


def parse_duration(text):
    text = str(text).strip()
    for suffix, scale in (("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    return float(text)


# ------------------------------------------------------------------------------------------------
# Pure helpers (tested by test_bench.py)


def stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values), "values": list(values)}


def fmt(value):
    if value is None:
        return "n/a"
    if value == 0:
        return "0"
    a = abs(value)
    if a >= 1000:
        return f"{value:.0f}"
    if a >= 100:
        return f"{value:.1f}"
    if a >= 10:
        return f"{value:.2f}"
    return f"{value:.3f}"


def fmt_cell(st):
    if not st:
        return "n/a"
    if st["n"] == 1:
        return fmt(st["median"])
    return f"{fmt(st['median'])} ({fmt(st['min'])}–{fmt(st['max'])})"


def cell(text):
    """Text for a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def ratio(st, base):
    if not st or not base or not base["median"]:
        return None
    return st["median"] / base["median"]


def fmt_ratio(r):
    return "n/a" if r is None else f"{r:.3f}"


def summarize(samples, workloads):
    out = collections.OrderedDict()
    for w in workloads:
        row = {}
        for cond in CONDITIONS:
            row[cond] = stats([s["value"] for s in samples
                               if s["workload"] == w and s["condition"] == cond and s["ok"]])
        row["ratio_neutracerd"] = ratio(row["neutracerd"], row["plain"])
        row["ratio_profiler"] = ratio(row["profiler"], row["plain"])
        out[w] = row
    return out


def prom_sum(samples, name, **labels):
    want = {k: str(v) for k, v in labels.items()}
    return sum(v for (n, l, v) in samples if n == name and all(l.get(k) == x for k, x in want.items()))


def prom_has(samples, name):
    return any(n == name for (n, _, _) in samples)


def pid_listed(samples, pid):
    return any(n.startswith("neutracer_") and l.get("pid") == str(pid) for (n, l, _) in samples)


def launches_by_kernel(samples, pid):
    out = {}
    for (n, l, v) in samples:
        if n == LAUNCHES and l.get("pid") == str(pid):
            out[l.get("kernel", "")] = out.get(l.get("kernel", ""), 0) + int(v)
    return out


LEAK_SUMMARY_RE = re.compile(r"LEAK SUMMARY:\s*(\d+)\s+bytes leaked in\s+(\d+)\s+allocations")
LEAKED_RE = re.compile(r"\b[Ll]eaked\b")
LEAKED_LINE_RE = re.compile(r"Leaked\s+(\d+)\s+bytes")


def sanitizer_verdict(text):
    """(reported, evidence) from compute-sanitizer output."""
    summary = LEAK_SUMMARY_RE.search(text)
    lines = LEAKED_LINE_RE.findall(text)
    if summary:
        return True, (f"LEAK SUMMARY: {summary.group(1)} bytes leaked in {summary.group(2)} "
                      f"allocations ({len(lines)} 'Leaked' lines)")
    if LEAKED_RE.search(text):
        return True, f"'leaked' in output ({len(lines)} 'Leaked' lines, no summary line)"
    errors = re.search(r"ERROR SUMMARY:\s*(\d+)", text)
    return False, ("no 'leaked' in output" +
                   (f" (ERROR SUMMARY: {errors.group(1)} errors)" if errors else ""))


def build_cuda(nvcc, source, output, archs, timeout=300):
    """Compiles with the first arch flag that works. Returns (ok, attempts)."""
    attempts = []
    for arch in archs:
        if not arch:
            continue
        cmd = [nvcc, "-O2", "-cudart", "static", arch, "-o", output, source]
        t0 = time.monotonic()
        try:
            res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 timeout=timeout)
            rc, text = res.returncode, res.stdout
        except (OSError, subprocess.TimeoutExpired) as exc:
            rc, text = -1, f"{type(exc).__name__}: {exc}"
        ok = rc == 0 and os.path.isfile(output)
        attempts.append({"cmd": cmd, "rc": rc, "output": text[-2000:], "ok": ok,
                         "seconds": round(time.monotonic() - t0, 2)})
        if ok:
            return True, attempts
    return False, attempts


def other_daemons(match=None):
    """PIDs whose comm is neutracerd (any copy would trace the plain runs). match (bytes): only
    those whose command line contains it (dry runs look for their own daemon alone: other
    daemons on a development machine do not change fake workloads)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/comm") as f:
                comm = f.read().strip()
            if comm != "neutracerd":
                continue
            with open(f"/proc/{name}/stat") as f:
                zombie = f.read().rsplit(")", 1)[1].split()[0] == "Z"
            with open(f"/proc/{name}/cmdline", "rb") as f:
                matched = match is None or match in f.read()
        except (OSError, IndexError):
            continue
        if not zombie and matched:
            found.append(int(name))
    return found


def port_busy(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


# ------------------------------------------------------------------------------------------------
# Report


def render_markdown(data):
    a = data["args"]
    env = data.get("environment", {})
    out = ["# neutracerd GPU benchmark", ""]
    if data.get("standin"):
        out += ["**DRY RUN with the real daemon**: the stand-in driver of "
                f"{data['standin']} (raw and leak programs are neutracer-scenario runs), fake "
                "PyTorch workloads and compute-sanitizer; only the raw loop's counts and the "
                "leak rows are real.", ""]
    elif data.get("dry_run"):
        out += ["**DRY RUN**: stand-ins from fake.py (CPU sleeps, fake daemon); the numbers mean "
                "nothing.", ""]
    wall = data.get("wall_s")
    out.append(f"- date: {data.get('started', '?')}; total wall time "
               f"{(wall or 0) / 60:.1f} min")
    gpu = env.get("gpu") or env.get("torch", {}).get("device", "?")
    t = env.get("torch", {})
    out.append(f"- GPU: {gpu}; torch {t.get('torch', '?')} (CUDA {t.get('torch_cuda', '?')}, "
               f"cuDNN {t.get('cudnn', '?')}), triton {t.get('triton', '?')}; "
               f"nvcc {env.get('nvcc', '?')}; compute-sanitizer "
               f"{env.get('compute_sanitizer', '?')}")
    out.append(f"- host: {env.get('host', '?')}, kernel {env.get('kernel', '?')}, "
               f"{env.get('cpu', '?')} ({env.get('nproc', '?')} CPUs), Python {env.get('python', '?')}")
    out.append(f"- neutracerd: {env.get('binary_version', '?')}; `{' '.join(data.get('daemon_cmd', []))}`")
    rounds = data.get("rounds_done", 0)
    pair = data.get("paired")
    if a.get("method") == "paired":
        out.append(f"- method: paired (one process per workload and toggler, "
                   f"{a.get('paired_seconds')} s each; probes switched on and off inside it)"
                   + (f"; **cut: {data['cut_reason']}**" if data.get("cut_reason") else ""))
    else:
        out.append(f"- rounds: {rounds} of {a['reps']} (each round: plain, neutracerd, profiler; "
                   f"each cell is the median (min–max) over the rounds, one fresh process per "
                   f"run)" + (f"; **cut: {data['cut_reason']}**" if data.get("cut_reason") else ""))
    out.append("")
    if pair:
        out += render_paired(pair)
    if a.get("method") != "paired":
        out += render_overhead(data, a)
    out += render_rest(data, a)
    return "\n".join(out)


def render_paired(pair):
    """run.py --method paired: paired.py's table and its reading."""
    s = pair.get("settings", {})
    out = ["## Overhead, paired inside one process", "",
           f"Each row: one workload process for {s.get('seconds')} s (the first "
           f"{s.get('warmup')} s of its chunks left out, and {s.get('settle')} s after every "
           "transition). daemon: neutracerd with `" + s.get("config_text", "").strip() + "`, its "
           "launch probes on for the sampled windows it logs; bare: one counting uprobe "
           "(launch_cost/symhits) on the launch entries, attached and detached in blocks of "
           f"about {s.get('block')} s; profiler: torch.profiler entered and left in such "
           "blocks (its start and stop left out). Ratio = on chunks' time per step over the "
           "neighbouring off chunks', per on-block; mean [95 % CI] over the blocks.", ""]
    out += paired.table(pair.get("rows", []))
    extra = paired.daemon_vs_bare(pair.get("rows", []))
    if extra:
        out += ["", "Target: daemon ≤ bare + 100 ns per launch:", ""] + extra
    extra = paired.profiler_baseline(pair.get("rows", []))
    if extra:
        out += ["", "The profiler's off stretches follow its first block (CUPTI stays set up):",
                ""] + extra
    if pair.get("skipped"):
        out += ["", "Skipped (budget): " + "; ".join(pair["skipped"])]
    if pair.get("fatal"):
        out += ["", f"Stopped: {pair['fatal']}"]
    out.append("")
    return out


def render_overhead(data, a):
    out = ["## Overhead", "",
            "| workload | unit | plain | neutracerd | ratio | profiler | ratio |",
            "|---|---|---|---|---|---|---|"]
    titles = {
        "raw": f"raw CUDA launch loop: {a['launches']} empty-kernel launches, one sync",
        "eager": f"PyTorch eager: {a['eager_iters']} × `x = x * 1.0001 + 0.1` (1024 floats)",
        "cnn": f"CNN training (ResNet-like, batch 64, 3×32×32, SGD): {a['cnn_steps']} steps",
        "transformer": (f"TransformerEncoder fwd+bwd (d 512, 8 heads, 6 layers, seq 256, "
                        f"batch 16, AdamW): {a['tf_steps']} steps"),
    }
    summary = data.get("summary", {})
    for w, row in summary.items():
        prof = "n/a" if w == "raw" else fmt_cell(row["profiler"])
        prof_ratio = "n/a" if w == "raw" else fmt_ratio(row["ratio_profiler"])
        out.append(f"| {titles.get(w, w)} | {UNITS[w]} | {fmt_cell(row['plain'])} | "
                   f"{fmt_cell(row['neutracerd'])} | {fmt_ratio(row['ratio_neutracerd'])} | "
                   f"{prof} | {prof_ratio} |")
    out += ["", "Ratio = condition median / plain median. plain: no daemon running. neutracerd: "
            "the daemon running, its probes attached, the process discovered before its timed "
            "part. profiler: no daemon; the timed loop alone inside "
            "`torch.profiler.profile(activities=[CPU, CUDA])` (not applicable to the raw CUDA "
            "program). Every timed part ends with a device synchronisation."]
    raw = summary.get("raw")
    if raw and raw.get("plain") and raw.get("neutracerd"):
        out.append(f"Raw loop: neutracerd adds {raw['neutracerd']['median'] - raw['plain']['median']:.0f} "
                   "ns per launch (difference of the medians).")
    out.append("")
    return out


def render_rest(data, a):
    out = []
    summary = data.get("summary", {})

    checks = data.get("launch_checks", [])
    if checks:
        out += ["## Launches counted by neutracerd (raw loop)", "",
                "| round | pid | launched | counted | exact | by kernel label |", "|---|---|---|---|---|---|"]
        for c in checks:
            labels = cell(", ".join(f"{k}: {v}" for k, v in sorted(c.get("by_kernel", {}).items())))
            out.append(f"| {c['round']} | {c['pid']} | {c['launched']} | "
                       f"{c['counted'] if c['counted'] is not None else 'n/a'} | "
                       f"{'yes' if c['exact'] else '**NO**'} | {labels} |")
        total_l = sum(c["launched"] for c in checks)
        total_c = sum(c["counted"] or 0 for c in checks)
        out += ["", f"Total: {total_c} counted of {total_l} launched (warm-up included), read from "
                "/metrics while the process was still alive: the first scrape equal to the "
                "launched count, else the one after two more daemon scans.", ""]

    leak = data.get("leak", [])
    if leak:
        out += [f"## Leak: {a['leak_allocs']} × {a['leak_mib']} MiB cudaMalloc, none freed", "",
                "| program | tool | wall s | reported the leak | evidence |", "|---|---|---|---|---|"]
        programs = {"exit": "returns from main", "reset": "cudaDeviceReset(), then returns"}
        tools = {"plain": "none", "neutracerd": "neutracerd",
                 "compute-sanitizer": "compute-sanitizer --tool memcheck --leak-check full"}
        for e in leak:
            rep = e.get("reported")
            rep_text = "–" if e["tool"] == "plain" else ("n/a" if rep is None else
                                                          ("yes" if rep else "no"))
            evidence = cell(e.get("evidence") or e.get("error") or "")
            out.append(f"| {programs.get(e['mode'], e['mode'])} | {tools.get(e['tool'], e['tool'])} | "
                       f"{fmt(e.get('wall_s'))} | {rep_text} | {evidence} |")
        out += ["", "Wall s: process start to exit (context creation, allocations, exit; "
                "compute-sanitizer's start-up and report included). For neutracerd the pauses of "
                "the hand-shake (waiting for discovery, reading the API before exit) are "
                "subtracted. neutracerd reports the leak when /api/v1/processes shows the "
                "allocated bytes in use for the pid before it exits and "
                f"`{EXITS}` rises when it exits.", ""]

    out += ["## Other figures"]
    if data.get("samples"):
        out += ["", "Process start to READY (imports, CUDA context, model set-up), median "
                "seconds:", "", "| workload | plain | neutracerd | profiler |", "|---|---|---|---|"]
    for w in summary if data.get("samples") else []:
        cells = []
        for cond in CONDITIONS:
            st = stats([s.get("startup_s") for s in data["samples"]
                        if s["workload"] == w and s["condition"] == cond and s["ok"]])
            cells.append("n/a" if not st else f"{st['median']:.2f}")
        out.append(f"| {w} | " + " | ".join(cells) + " |")
    prof_rows = []
    for w in summary:
        ps = [s["result"].get("profiler") for s in data["samples"]
              if s["workload"] == w and s["condition"] == "profiler" and s["ok"]
              and s.get("result", {}).get("profiler")]
        if ps:
            enter = statistics.median(p.get("enter_seconds", 0) for p in ps)
            exit_ = statistics.median(p.get("exit_seconds", 0) for p in ps)
            dev = [p.get("device_events") for p in ps if p.get("device_events") is not None]
            prof_rows.append(f"| {w} | {enter:.2f} | {exit_:.2f} | "
                             f"{statistics.median(dev) if dev else 'n/a'} |")
    if prof_rows:
        out += ["", "torch.profiler outside the timed loop (medians): start and stop seconds, "
                "device events recorded:", "", "| workload | start s | stop s | device events |",
                "|---|---|---|---|"] + prof_rows
    nt = [s for s in data["samples"] if s["condition"] == "neutracerd" and s["ok"]
          and s["workload"] != "raw" and s.get("daemon")]
    if nt:
        out += ["", "Launches neutracerd counted for the PyTorch processes (at least; read one scan "
                "after the timed loop): " + ", ".join(
                    f"{s['workload']} r{s['round']}: {s['daemon'].get('launches')}" for s in nt)]
    out += render_bpf(data)
    sessions = data.get("daemon_sessions", [])
    if sessions:
        out += ["", "Daemon sessions (start = until /healthz answers; attach = until "
                "`neutracer_attached_libraries` ≥ 1, with a process holding libcuda mapped; stop = "
                "SIGTERM to exit, probes detached):", "",
                "| session | start s | attach s | stop s | exit | dropped events | attach errors | map errors |",
                "|---|---|---|---|---|---|---|---|"]
        for d in sessions:
            h = d.get("health", {})
            out.append(f"| {d['label']} | {fmt(d.get('start_s'))} | {fmt(d.get('attach_s'))} | "
                       f"{fmt(d.get('stop_s'))} | {d.get('exit', '?')} | "
                       f"{h.get('dropped', 'n/a')} | {h.get('attach_errors', 'n/a')} | "
                       f"{h.get('map_errors', 'n/a')} |")
    build = data.get("build", {})
    if build.get("attempts"):
        ok = [x for x in build["attempts"] if x["ok"]]
        out += ["", f"CUDA program: `{' '.join(ok[0]['cmd']) if ok else 'build failed'}`"
                + (f" ({ok[0]['seconds']} s)" if ok else "")]
    out += ["", "## Problems", ""]
    problems = data.get("problems", [])
    out += [f"- {p}" for p in problems] if problems else ["none"]
    out += ["", f"Command: `{data.get('command', '')}`", ""]
    return out


def steps_run(result):
    """Steps a workload ran from go to RESULT, warm-up included (launches for the raw loop)."""
    return (result.get("total_launches")
            or (result.get("iterations") or 0) + (result.get("warmup") or 0))


def render_bpf(data):
    """The BPF programs that ran while each workload ran under neutracerd (--progstats)."""
    per = collections.defaultdict(lambda: collections.defaultdict(list))
    steps = {}
    for s in data.get("samples", []):
        if s.get("condition") != "neutracerd" or "bpf" not in s:
            continue
        n = steps_run(s.get("result", {}))
        if n <= 0:
            continue
        steps[s["workload"]] = UNITS[s["workload"]].split("/")[-1]
        for name, d in s["bpf"].items():
            per[s["workload"]][name].append((d["hits"] / n, d["hits"], d["ns"] / d["hits"],
                                             d["ns"] / n / 1000.0))
    if not per:
        return []
    out = ["", "BPF programs while each workload ran under neutracerd (`--progstats`; from go to "
           "RESULT, warm-up included; median (min–max) over the rounds; a program's own time, "
           "not the trap that runs it):", "",
           "| workload | program | hits per step | hits per run | ns per hit | µs per step |",
           "|---|---|---|---|---|---|"]
    for w in WORKLOAD_ORDER:
        for name, rows in sorted(per.get(w, {}).items(), key=lambda kv: -max(r[3] for r in kv[1])):
            cols = [fmt_cell(stats([r[i] for r in rows])) for i in range(4)]
            out.append(f"| {w} ({steps[w]}) | `{name}` | " + " | ".join(cols) + " |")
    return out


def exit_status(data):
    if any(not s["ok"] for s in data["samples"]):
        return 1
    if any(not c["exact"] for c in data.get("launch_checks", [])):
        return 1
    if any(e["tool"] == "neutracerd" and e.get("reported") is not True for e in data.get("leak", [])):
        return 1
    if any(e.get("error") for e in data.get("leak", [])):
        return 1
    if data.get("fatal"):
        return 1
    pair = data.get("paired")
    if pair and (pair.get("fatal") or paired.exit_code(pair) != 0):
        return 1
    return 0


# ------------------------------------------------------------------------------------------------
# Processes


class ProgStats:
    """BPF run-time statistics of every loaded program (launch_cost/progstats --enable holds
    kernel.bpf_stats on while it runs): hits and nanoseconds spent in each program, snapshot on
    demand, summed by program name."""

    def __init__(self, binary):
        self.p = subprocess.Popen([binary, "--enable"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        first = self.p.stdout.readline().strip()
        if first != "ENABLED":
            self.p.kill()
            raise SetupError(f"{binary} --enable printed {first!r}, not ENABLED (root needed)")

    def snap(self):
        self.p.stdin.write("snap\n")
        self.p.stdin.flush()
        if self.p.stdout.readline().split(" ")[0].strip() != "SNAP":
            raise StepError("progstats: no snapshot")
        progs = {}
        for line in iter(self.p.stdout.readline, ""):
            line = line.strip()
            if line == "END":
                return progs
            _id, _type, cnt, ns, name = line.split(" ", 4)
            hits = progs.setdefault(name, [0, 0])
            hits[0] += int(cnt)
            hits[1] += int(ns)
        raise StepError("progstats ended")

    def close(self):
        with contextlib.suppress(OSError):
            self.p.stdin.close()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()


def bpf_delta(before, after):
    """Per program: hits and ns between two ProgStats snapshots (programs that ran)."""
    out = {}
    for name, (cnt, ns) in after.items():
        c0, n0 = before.get(name, (0, 0))
        if cnt > c0:
            out[name] = {"hits": cnt - c0, "ns": ns - n0}
    return out


class Child:
    """A process with stdout lines in a queue (and a log file), stderr in a file."""

    def __init__(self, cmd, env, log_base, stdin=subprocess.DEVNULL):
        self.cmd = cmd
        self.stdout_path = log_base + ".stdout"
        self.stderr_path = log_base + ".stderr"
        self._err = open(self.stderr_path, "w")
        self.lines = queue.Queue()
        self.t_spawn = time.monotonic()
        try:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._err,
                                         stdin=stdin, text=True, env=env, start_new_session=True)
        except OSError as exc:
            self._err.close()
            raise StepError(f"cannot start {cmd[0]}: {exc}")
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        with open(self.stdout_path, "w") as copy:
            for raw in iter(self.proc.stdout.readline, ""):
                copy.write(raw)
                copy.flush()
                self.lines.put((time.monotonic(), raw.rstrip("\n")))
        self.lines.put((time.monotonic(), None))

    def expect(self, prefix, timeout):
        """Waits for a stdout line starting with prefix; returns (time, rest of the line)."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StepError(f"no '{prefix}' line within {timeout:.0f} s "
                                f"(stderr: {tail(self.stderr_path)})")
            try:
                t, line = self.lines.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if line is None:
                self.lines.put((t, None))
                rc = self.wait_exit(10)
                raise StepError(f"exited with status {rc} before '{prefix}' "
                                f"(stderr: {tail(self.stderr_path)})")
            if line.startswith(prefix):
                return t, line[len(prefix):].strip()

    def wait_exit(self, timeout):
        try:
            rc = self.proc.wait(timeout=max(timeout, 0.1))
        except subprocess.TimeoutExpired:
            raise StepError(f"did not exit within {timeout:.0f} s")
        self._reader.join(timeout=5)
        self.t_exit = time.monotonic()
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


class Runner:
    def __init__(self, args):
        self.args = args
        self.dry = args.dry_run or bool(args.standin)
        self.standin = os.path.abspath(args.standin) if args.standin else None
        self.outdir = os.path.abspath(args.outdir)
        self.logs = os.path.join(self.outdir, "logs")
        self.t0 = time.monotonic()
        self.hard_deadline = self.t0 + args.budget_minutes * 60
        self.port = args.port
        self.url = f"http://127.0.0.1:{self.port}"
        self.scan_s = parse_duration(args.scan_interval)
        self.daemon = None
        self.daemon_log = None
        self.holder = None
        self.session = None
        self.restarts = 0
        self.state_dir = None
        self.cuda_cmd = None
        self.sanitizer = None
        self.progstats = None
        self.binary = os.path.abspath(args.binary)
        self.data = {
            "schema": 1, "started": now_iso(), "dry_run": self.dry, "standin": self.standin,
            "command": " ".join([os.path.relpath(__file__, os.getcwd())] + sys.argv[1:]),
            "args": {k: v for k, v in vars(args).items()},
            "rounds_done": 0, "cut_reason": None, "round_seconds": [],
            "samples": [], "launch_checks": [], "leak": [], "daemon_sessions": [],
            "problems": [], "summary": {},
        }
        self.data["daemon_cmd"] = self.daemon_cmd()

    # -------------------------------------------------------------------- bookkeeping

    def log(self, message):
        elapsed = time.monotonic() - self.t0
        print(f"[run.py {time.strftime('%H:%M:%S')} +{elapsed:4.0f}s] {message}", flush=True)

    def problem(self, message):
        self.data["problems"].append(message)
        self.log("PROBLEM: " + message)

    def remaining(self):
        return self.hard_deadline - time.monotonic()

    def limit(self, timeout):
        """A wait's timeout, bounded by the run's hard deadline."""
        left = self.remaining()
        if left <= 1:
            raise Deadline(f"the run's budget ({self.args.budget_minutes} min) is spent")
        return min(timeout, left)

    def save(self):
        self.data["wall_s"] = round(time.monotonic() - self.t0, 1)
        self.data["summary"] = summarize(self.data["samples"], self.workloads())
        tmp = os.path.join(self.outdir, "bench.json.tmp")
        with open(tmp, "w") as f:
            json.dump(self.data, f, indent=1, sort_keys=False)
        os.replace(tmp, os.path.join(self.outdir, "bench.json"))
        with open(os.path.join(self.outdir, "bench.md"), "w") as f:
            f.write(render_markdown(self.data))

    def workloads(self):
        return [w for w in WORKLOAD_ORDER if w in self.args.workloads]

    # -------------------------------------------------------------------- environments

    def daemon_match(self):
        return f"127.0.0.1:{self.port}".encode() if self.dry else None

    def daemon_cmd(self):
        base = [self.binary, "--config", self.args.daemon_config or "/dev/null",
                "--listen", f"127.0.0.1:{self.port}",
                "--scan-interval", self.args.scan_interval]
        if self.dry and not self.standin:
            return [sys.executable, os.path.join(HERE, "fake.py"), "daemon"] + base[1:]
        return base

    def daemon_env(self):
        env = dict(os.environ)
        libdir = os.path.join(os.path.dirname(self.binary), "lib")
        if os.path.isdir(libdir) and (self.standin or not self.dry):
            env["LD_LIBRARY_PATH"] = libdir + (":" + env["LD_LIBRARY_PATH"]
                                               if env.get("LD_LIBRARY_PATH") else "")
        if self.state_dir:
            env["NT_BENCH_FAKE_STATE"] = self.state_dir
        return env

    def workload_env(self):
        env = dict(os.environ)
        env["PYTHONUNBUFFERED"] = "1"
        if self.state_dir:
            env["NT_BENCH_FAKE_STATE"] = self.state_dir
        if self.standin:
            env["NT_BENCH_SCENARIO"] = os.path.join(self.standin, "neutracer-scenario")
            env["NT_BENCH_STANDIN_LIB"] = os.path.join(self.standin, "libcuda.so.1")
            env["LD_LIBRARY_PATH"] = self.standin  # the holder's dlopen("libcuda.so.1")
        return env

    # -------------------------------------------------------------------- setup

    def setup(self):
        shutil.rmtree(self.logs, ignore_errors=True)  # this script's own folder: no stale logs
        os.makedirs(self.logs, exist_ok=True)
        if self.dry:
            self.state_dir = tempfile.mkdtemp(prefix="ntb_fake_")
        if self.standin:
            for name in ("neutracer-scenario", "libcuda.so.1"):
                if not os.path.isfile(os.path.join(self.standin, name)):
                    raise SetupError(f"--standin {self.standin} has no {name}")
        if not self.dry or self.standin:
            if os.geteuid() != 0:
                raise SetupError("must run as root (the daemon attaches uprobes)")
            if not (os.path.isfile(self.binary) and os.access(self.binary, os.X_OK)):
                raise SetupError(f"{self.binary} is not an executable file")
        if port_busy(self.port):
            raise SetupError(f"something already listens on 127.0.0.1:{self.port} "
                             "(an old neutracerd?); stop it or pass --port")
        others = other_daemons(self.daemon_match())
        if others:
            msg = (f"another neutracerd is running (pid {', '.join(map(str, others))}): it "
                   "would trace the plain and profiler runs; stop it first")
            if not self.dry:
                raise SetupError(msg)
            self.problem("dry run: " + msg)
        self.environment()
        self.build()
        if "leak" in self.args.sections:
            self.find_sanitizer()
        if self.args.progstats:
            self.progstats = ProgStats(os.path.abspath(self.args.progstats))
        self.save()

    def run_quiet(self, cmd, timeout=60, env=None):
        try:
            res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 timeout=timeout, env=env)
            return res.returncode, res.stdout.strip()
        except (OSError, subprocess.TimeoutExpired) as exc:
            return -1, f"{type(exc).__name__}: {exc}"

    def environment(self):
        env = {"host": platform.node(), "kernel": platform.release(),
               "python": platform.python_version(), "nproc": os.cpu_count()}
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        env["cpu"] = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        if self.dry:
            env.update({"gpu": "fake GPU (dry run)", "torch": {"torch": "fake"},
                        "nvcc": "fake", "binary_version": "fake neutracerd"})
            if self.standin:
                rc, text = self.run_quiet([self.binary, "--version"], env=self.daemon_env())
                env["binary_version"] = (text.splitlines()[0] if text else f"rc {rc}") + \
                    f" with the stand-in driver of {self.standin}"
            self.data["environment"] = env
            return
        self.log("environment: nvidia-smi, torch (also warms the GPU and the page cache)")
        smi = shutil.which("nvidia-smi")
        if smi:
            rc, text = self.run_quiet([smi, "--query-gpu=name,driver_version,memory.total",
                                       "--format=csv,noheader"])
            env["gpu"] = text.splitlines()[0] if rc == 0 and text else f"nvidia-smi failed: {text}"
        else:
            env["gpu"] = "nvidia-smi not found"
        rc, text = self.run_quiet([self.args.python, "-c", TORCH_PROBE], timeout=180)
        try:
            env["torch"] = json.loads(text.splitlines()[-1])
        except (ValueError, IndexError):
            env["torch"] = {"error": text[-500:]}
        if env["torch"].get("error") or not env["torch"].get("cuda_available"):
            self.problem(f"torch probe: {env['torch']}")
        nvcc = self.find_nvcc()
        if nvcc:
            rc, text = self.run_quiet([nvcc, "--version"])
            lines = [l for l in text.splitlines() if "release" in l] or text.splitlines() or ["?"]
            env["nvcc"] = lines[-1].strip()
        rc, text = self.run_quiet([self.binary, "--version"], env=self.daemon_env())
        env["binary_version"] = text.splitlines()[0] if text else f"rc {rc}"
        self.data["environment"] = env
        self.log(f"environment: {env.get('gpu')}; torch {env['torch'].get('torch')}; "
                 f"neutracerd {env['binary_version']}")

    def find_nvcc(self):
        for cand in (self.args.nvcc, shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
            if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
                return cand
        return None

    def build(self):
        if self.dry:
            role = "standin" if self.standin else "cuda"
            self.cuda_cmd = [sys.executable, os.path.join(HERE, "fake.py"), role]
            self.data["build"] = {"dry_run": True}
            return
        nvcc = self.find_nvcc()
        if not nvcc:
            raise SetupError("nvcc not found (PATH, /usr/local/cuda/bin, or --nvcc)")
        out = os.path.join(self.outdir, "build", "nt_cuda_bench")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        archs = [os.environ.get("NT_NVCC_ARCH"), "-arch=native", "-arch=sm_90"]
        self.log(f"building {out} with {nvcc}")
        ok, attempts = build_cuda(nvcc, os.path.join(HERE, "cuda_bench.cu"), out, archs)
        self.data["build"] = {"nvcc": nvcc, "attempts": attempts, "ok": ok}
        if not ok:
            raise SetupError("nvcc failed: " + " || ".join(
                f"{' '.join(a['cmd'][4:5])}: {a['output'][-400:]}" for a in attempts))
        self.cuda_cmd = [out]

    def find_sanitizer(self):
        if self.dry:
            self.sanitizer = [sys.executable, os.path.join(HERE, "fake.py"), "sanitizer"]
            self.data["environment"]["compute_sanitizer"] = "fake"
            return
        for cand in (self.args.sanitizer, shutil.which("compute-sanitizer"),
                     "/usr/local/cuda/bin/compute-sanitizer"):
            if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
                self.sanitizer = [cand]
                rc, text = self.run_quiet([cand, "--version"])
                self.data["environment"]["compute_sanitizer"] = (
                    text.splitlines()[-1] if text else "?")
                return
        self.data["environment"]["compute_sanitizer"] = "not found"

    # -------------------------------------------------------------------- daemon

    def scrape(self, timeout=5.0):
        return parse_prometheus(fetch(self.url + "/metrics", timeout=timeout))

    def start_daemon(self, label):
        path = os.path.join(self.logs, f"daemon-{label}.log")
        self.daemon_log = path
        logf = open(path, "a")
        t0 = time.monotonic()
        try:
            self.daemon = subprocess.Popen(self.data["daemon_cmd"], stdout=logf,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                           env=self.daemon_env(), start_new_session=True)
        finally:
            logf.close()
        deadline = t0 + self.limit(60)
        while True:
            if self.daemon.poll() is not None:
                rc = self.daemon.returncode
                self.daemon = None
                raise StepError(f"daemon exited with status {rc} at start-up "
                                f"({tail(path, 4)})")
            try:
                fetch(self.url + "/healthz", timeout=2)
                break
            except RuntimeError:
                pass
            if time.monotonic() > deadline:
                raise StepError(f"daemon not healthy within 60 s ({tail(path, 4)})")
            time.sleep(0.1)
        return time.monotonic() - t0

    def stop_daemon(self):
        """SIGTERM, wait (probe removal takes seconds), SIGKILL as a last resort."""
        if self.daemon is None:
            return None
        proc = self.daemon  # cleared only once it has exited (an interrupt may come first)
        t0 = time.monotonic()
        info = {}
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            wait = self.args.stop_timeout if self.remaining() > 30 else 30
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                self.problem(f"daemon did not exit {wait:.0f} s after SIGTERM; SIGKILL")
                info["killed"] = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()
        self.daemon = None
        info["stop_s"] = round(time.monotonic() - t0, 2)
        info["exit"] = proc.returncode
        return info

    def start_holder(self, label):
        """A process that only maps libcuda.so.1 (no cuInit), so that the daemon attaches at its
        first scan, before any workload starts, and stays attached between workloads."""
        if self.dry and not self.standin:
            cmd = [sys.executable, os.path.join(HERE, "fake.py"), "holder"]
        else:
            cmd = [self.args.python if not self.dry else sys.executable, "-c", HOLDER_CODE]
        holder = None
        try:
            holder = Child(cmd, self.workload_env(), os.path.join(self.logs, f"holder-{label}"),
                           stdin=subprocess.PIPE)
            holder.expect("HOLD", self.limit(30))
            self.holder = holder
            return True, ""
        except StepError as exc:
            if holder is not None:
                holder.kill()
            return False, str(exc)

    def stop_holder(self):
        if self.holder is None:
            return
        holder, self.holder = self.holder, None
        try:
            holder.proc.stdin.close()
        except OSError:
            pass
        try:
            holder.wait_exit(10)
        except StepError:
            pass
        holder.kill()

    @contextlib.contextmanager
    def daemon_session(self, label):
        session = {"label": label}
        self.session = session
        self.data["daemon_sessions"].append(session)
        try:
            if not self.args.no_holder:
                ok, err = self.start_holder(label)
                session["holder"] = ok
                if not ok:
                    self.problem(f"{label}: libcuda holder failed ({err}); the daemon attaches at "
                                 "the first workload instead")
            self.log(f"{label}: starting neutracerd")
            session["start_s"] = round(self.start_daemon(label), 2)
            if self.holder is not None:
                session["attach_s"] = self.wait_attached(20)
            self.log(f"{label}: daemon up in {session['start_s']} s, attached in "
                     f"{session.get('attach_s')} s")
            yield session
        finally:
            if self.daemon is not None and self.daemon.poll() is None:
                try:
                    samples = self.scrape()
                    session["health"] = {
                        "dropped": int(prom_sum(samples, "neutracer_events_dropped_total")),
                        "attach_errors": int(prom_sum(samples, "neutracer_probe_attach_errors_total")),
                        "map_errors": int(prom_sum(samples, "neutracer_bpf_map_update_errors_total")),
                        "probes": int(prom_sum(samples, "neutracer_attached_probes")),
                    }
                    with open(os.path.join(self.logs, f"daemon-{label}.final.metrics"), "w") as f:
                        f.write(fetch(self.url + "/metrics"))
                except (RuntimeError, ValueError) as exc:
                    session["health"] = {"error": str(exc)}
            stop = self.stop_daemon()
            if stop:
                session.update(stop)
                self.log(f"{label}: daemon stopped in {stop['stop_s']} s (exit {stop['exit']})")
            self.stop_holder()
            self.session = None
            h = session.get("health", {})
            if h.get("dropped") or h.get("attach_errors") or h.get("map_errors"):
                self.problem(f"{label}: daemon health {h}")

    def wait_attached(self, timeout):
        t0 = time.monotonic()
        deadline = t0 + self.limit(timeout)
        while time.monotonic() < deadline:
            try:
                if prom_sum(self.scrape(), "neutracer_attached_libraries") >= 1:
                    return round(time.monotonic() - t0, 2)
            except (RuntimeError, ValueError):
                pass
            time.sleep(0.1)
        self.problem(f"neutracer_attached_libraries stayed 0 for {timeout} s with the holder up")
        return None

    def ensure_daemon(self):
        if self.daemon is not None and self.daemon.poll() is None:
            return
        rc = self.daemon.returncode if self.daemon is not None else None
        if self.restarts >= 2:
            raise StepError(f"daemon is not running (exit {rc}); no restarts left")
        self.restarts += 1
        self.problem(f"daemon died (exit {rc}, log {self.daemon_log}: {tail(self.daemon_log, 3)}); "
                     "restarting it")
        self.daemon = None
        self.start_daemon(self.session["label"] + f"-restart{self.restarts}")
        self.session["restarts"] = self.session.get("restarts", 0) + 1

    def wait_discovered(self, pid, child, timeout):
        t0 = time.monotonic()
        deadline = t0 + self.limit(timeout)
        last = "no scrape yet"
        while time.monotonic() < deadline:
            if child.proc.poll() is not None:
                raise StepError(f"exited with status {child.proc.returncode} before discovery")
            try:
                samples = self.scrape()
                attached = prom_sum(samples, "neutracer_attached_libraries")
                if pid_listed(samples, pid) and attached >= 1:
                    return round(time.monotonic() - t0, 2)
                last = f"listed={pid_listed(samples, pid)}, attached_libraries={attached:g}"
            except (RuntimeError, ValueError) as exc:
                last = str(exc)
            time.sleep(0.1)
        raise StepError(f"pid {pid} not discovered by neutracerd within {timeout:.0f} s ({last})")

    def read_launches(self, pid, expected):
        """Launches the daemon counted for pid. Returns at once when the count equals
        `expected`; otherwise once `neutracer_scans_total` has advanced by 2 (so a whole scan
        ran after the timed loop: final) or 1 when nothing is expected (informational)."""
        need = 2 if expected is not None else 1
        deadline = time.monotonic() + self.limit((need + 2) * self.scan_s + 3)
        first_scans = None
        count, by_kernel, how = None, {}, "timeout"
        while True:
            try:
                samples = self.scrape()
                by_kernel = launches_by_kernel(samples, pid)
                count = sum(by_kernel.values())
                scans = prom_sum(samples, "neutracer_scans_total")
                if first_scans is None:
                    first_scans = scans
                if expected is not None and count == expected:
                    how = "exact"
                    break
                if scans - first_scans >= need:
                    how = f"after {need} scan(s)"
                    break
            except (RuntimeError, ValueError) as exc:
                how = f"scrape error: {exc}"
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
        return {"launches": count, "by_kernel": by_kernel, "how": how}

    # -------------------------------------------------------------------- workloads

    def workload_cmd(self, w, cond, sync):
        a = self.args
        timeout = str(int(a.workload_timeout))
        if w == "raw":
            return self.cuda_cmd + ["launch", str(a.launches), str(a.launch_warmup), sync, timeout]
        iters, warm = {"eager": (a.eager_iters, a.eager_warmup), "cnn": (a.cnn_steps, a.cnn_warmup),
                       "transformer": (a.tf_steps, a.tf_warmup)}[w]
        cmd = [a.python if not self.dry else sys.executable, "-u",
               os.path.join(HERE, "torch_workloads.py"), w, "--condition", cond,
               "--sync-dir", sync, "--iterations", str(iters), "--warmup", str(warm),
               "--timeout", timeout]
        return cmd + (["--fake"] if self.dry else [])

    def run_workload(self, w, cond, rnd):
        sample = {"workload": w, "condition": cond, "round": rnd, "ok": False, "value": None,
                  "unit": UNITS[w], "error": None, "result": {}}
        sync = tempfile.mkdtemp(prefix=f"ntb_{w}_")
        base = os.path.join(self.logs, f"r{rnd}-{cond}-{w}")
        child = None
        try:
            if cond == "neutracerd":
                self.ensure_daemon()
            child = Child(self.workload_cmd(w, cond, sync), self.workload_env(), base)
            t_ready, rest = child.expect("READY", self.limit(self.args.ready_timeout))
            pid = int(rest.split()[0])
            sample["pid"] = pid
            sample["startup_s"] = round(t_ready - child.t_spawn, 3)
            if cond == "neutracerd":
                sample["discovery_s"] = self.wait_discovered(pid, child, 30)
                time.sleep(0.5)
            bpf_before = self.progstats.snap() if self.progstats and cond == "neutracerd" else None
            touch(os.path.join(sync, "go"))
            t_result, rest = child.expect("RESULT", self.limit(self.args.run_timeout))
            if bpf_before is not None:
                sample["bpf"] = bpf_delta(bpf_before, self.progstats.snap())
            try:
                result = json.loads(rest)
            except ValueError:
                raise StepError(f"RESULT is not JSON: {rest[:200]!r}")
            sample["result"] = result
            if cond == "neutracerd":
                expected = result.get("total_launches") if w == "raw" else None
                sample["daemon"] = self.read_launches(pid, expected)
                if w == "raw":
                    counted = sample["daemon"]["launches"]
                    self.data["launch_checks"].append({
                        "round": rnd, "pid": pid, "launched": expected, "counted": counted,
                        "exact": counted == expected, "by_kernel": sample["daemon"]["by_kernel"],
                        "how": sample["daemon"]["how"]})
                    if counted != expected:
                        self.problem(f"r{rnd} raw: neutracerd counted {counted} launches of "
                                     f"{expected} ({sample['daemon']['how']})")
            touch(os.path.join(sync, "release"))
            rc = child.wait_exit(self.limit(60))
            sample["rc"] = rc
            sample["wall_s"] = round(child.t_exit - child.t_spawn, 3)
            if rc != 0:
                raise StepError(f"exited with status {rc} (stderr: {tail(child.stderr_path)})")
            value = result.get("value")
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise StepError(f"bad value in RESULT: {value!r}")
            sample["value"] = float(value)
            sample["ok"] = True
            check = result.get("check")
            if isinstance(check, dict) and check.get("finite") is False:
                self.problem(f"r{rnd} {cond} {w}: non-finite result {check}")
            prof = result.get("profiler")
            if cond == "profiler" and isinstance(prof, dict) and prof.get("device_events") == 0:
                self.problem(f"r{rnd} {w}: the profiler recorded no device events")
            extra = ""
            if sample.get("daemon"):
                extra = f"; daemon counted {sample['daemon']['launches']} launches"
                if w != "raw" and not self.dry and not sample["daemon"]["launches"]:
                    self.problem(f"r{rnd} {w}: neutracerd counted no launches for pid {pid} "
                                 f"({sample['daemon']['how']}): was it traced?")
            self.log(f"r{rnd} {cond:10s} {w:11s}: {fmt(sample['value'])} {UNITS[w]} "
                     f"(pid {pid}, ready {sample['startup_s']:.1f} s, wall {sample['wall_s']:.1f} s"
                     f"{extra})")
        except (StepError, RuntimeError, ValueError, OSError) as exc:
            sample["error"] = str(exc)
            self.problem(f"r{rnd} {cond} {w}: {exc} (logs {base}.*)")
        except Deadline as exc:
            sample["error"] = str(exc)
            self.data["samples"].append(sample)
            raise
        finally:
            if child is not None:
                child.kill()
            shutil.rmtree(sync, ignore_errors=True)
        self.data["samples"].append(sample)
        self.save()
        return sample

    def check_no_daemon(self, label):
        others = other_daemons(self.daemon_match())
        if others:
            self.problem(f"{label}: a neutracerd is running (pid {others}) during a run "
                         "without the daemon")

    def run_round(self, rnd):
        ws = self.workloads()
        self.check_no_daemon(f"r{rnd} plain")
        for w in ws:
            self.run_workload(w, "plain", rnd)
        if ws:
            done = []
            try:
                with self.daemon_session(f"r{rnd}-neutracerd"):
                    for w in ws:
                        self.run_workload(w, "neutracerd", rnd)
                        done.append(w)
            except StepError as exc:
                self.problem(f"r{rnd} neutracerd phase: {exc}")
                for w in ws[len(done):]:
                    self.data["samples"].append({
                        "workload": w, "condition": "neutracerd", "round": rnd, "ok": False,
                        "value": None, "unit": UNITS[w], "result": {},
                        "error": f"daemon session failed: {exc}"})
                self.save()
        prof = [] if self.args.no_profiler else [w for w in ws if w != "raw"]
        if prof:
            self.check_no_daemon(f"r{rnd} profiler")
        for w in prof:
            self.run_workload(w, "profiler", rnd)

    # -------------------------------------------------------------------- leak

    def leak_cmd(self, mode, sync):
        a = self.args
        return self.cuda_cmd + ["leak", str(a.leak_allocs), str(a.leak_mib * MiB), sync, mode,
                                str(int(a.workload_timeout))]

    def leak_plain(self, mode, tool):
        entry = {"mode": mode, "tool": tool, "reported": None}
        base = os.path.join(self.logs, f"leak-{mode}-{tool}")
        cmd = self.leak_cmd(mode, "-")
        if tool == "compute-sanitizer":
            cmd = self.sanitizer + ["--tool", "memcheck", "--leak-check", "full"] + cmd
        entry["cmd"] = cmd
        child = None
        try:
            child = Child(cmd, self.workload_env(), base)
            rc = child.wait_exit(self.limit(self.args.sanitizer_timeout))
            entry["rc"] = rc
            entry["wall_s"] = round(child.t_exit - child.t_spawn, 3)
            with open(child.stdout_path, errors="replace") as f:
                out = f.read()
            with open(child.stderr_path, errors="replace") as f:
                out += "\n" + f.read()
            m = re.search(r"^RESULT (.*)$", out, re.M)
            if m:
                try:
                    entry["result"] = json.loads(m.group(1))
                except ValueError:
                    pass
            if tool == "compute-sanitizer":
                entry["reported"], entry["evidence"] = sanitizer_verdict(out)
                entry["evidence"] += f"; exit status {rc}"
            elif rc != 0:
                raise StepError(f"exited with status {rc} (stderr: {tail(child.stderr_path)})")
            if "result" not in entry:
                entry["error"] = f"no RESULT line from the program (exit {rc}; see {base}.*)"
        except StepError as exc:
            entry["error"] = str(exc)
        finally:
            if child is not None:
                child.kill()
        if entry.get("error"):
            self.problem(f"leak {mode} {tool}: {entry['error']}")
        self.log(f"leak {mode:5s} {tool:17s}: wall {fmt(entry.get('wall_s'))} s, reported "
                 f"{entry.get('reported')} {entry.get('evidence', '')}")
        return entry

    def leak_neutracerd(self, mode):
        a = self.args
        expected = a.leak_allocs * a.leak_mib * MiB
        entry = {"mode": mode, "tool": "neutracerd", "reported": None}
        base = os.path.join(self.logs, f"leak-{mode}-neutracerd")
        sync = tempfile.mkdtemp(prefix="ntb_leak_")
        child = None
        try:
            self.ensure_daemon()
            child = Child(self.leak_cmd(mode, sync), self.workload_env(), base)
            t_ready, rest = child.expect("READY", self.limit(60))
            pid = int(rest.split()[0])
            entry["pid"] = pid
            self.wait_discovered(pid, child, 30)
            time.sleep(0.5)
            t_go = time.monotonic()
            touch(os.path.join(sync, "go"))
            t_result, rest = child.expect("RESULT", self.limit(120))
            entry["result"] = json.loads(rest)
            # GPU bytes in use for the pid, from /api/v1/processes, before the process exits.
            in_use, t_end = None, time.monotonic() + self.limit(3 * self.scan_s + 3)
            entry["api_latency_s"] = None
            while time.monotonic() < t_end:
                try:
                    doc = json.loads(fetch(self.url + "/api/v1/processes"))
                    for p in doc.get("processes", []):
                        if p.get("pid") == pid:
                            in_use = p.get("gpu_bytes_in_use")
                except (RuntimeError, ValueError):
                    pass
                if in_use is not None and in_use >= expected:
                    entry["api_latency_s"] = round(time.monotonic() - t_result, 2)
                    break
                time.sleep(0.2)
            entry["gpu_bytes_in_use"] = in_use
            samples = self.scrape()
            exits0, bytes0 = prom_sum(samples, EXITS), prom_sum(samples, EXIT_BYTES)
            entry["exit_metric_present"] = prom_has(samples, EXITS)
            t_release = time.monotonic()
            touch(os.path.join(sync, "release"))
            rc = child.wait_exit(self.limit(60))
            entry["rc"] = rc
            pause = (t_go - t_ready) + (t_release - t_result)
            entry["wall_s"] = round(child.t_exit - child.t_spawn - pause, 3)
            entry["wall_with_handshake_s"] = round(child.t_exit - child.t_spawn, 3)
            # The exit, seen at the next scans.
            exits, exit_bytes, t_end = exits0, bytes0, time.monotonic() + self.limit(3 * self.scan_s + 3)
            while time.monotonic() < t_end:
                try:
                    samples = self.scrape()
                    exits, exit_bytes = prom_sum(samples, EXITS), prom_sum(samples, EXIT_BYTES)
                except (RuntimeError, ValueError):
                    pass
                if exits > exits0:
                    entry["exit_latency_s"] = round(time.monotonic() - child.t_exit, 2)
                    break
                time.sleep(0.2)
            entry["exits_delta"] = int(exits - exits0)
            entry["held_at_exit_bytes_delta"] = int(exit_bytes - bytes0)
            logged = False
            try:
                with open(self.daemon_log, errors="replace") as f:
                    logged = f"(pid {pid}) exited holding" in f.read()
            except OSError:
                pass
            entry["logged"] = logged
            entry["reported"] = bool(in_use is not None and in_use >= expected
                                     and entry["exits_delta"] >= 1)
            entry["evidence"] = (
                f"gpu_bytes_in_use {in_use} (expected ≥ {expected}) before exit, seen "
                f"{entry['api_latency_s']} s after the allocations; {EXITS} "
                f"+{entry['exits_delta']} {entry.get('exit_latency_s')} s after the exit, held at "
                f"exit +{entry['held_at_exit_bytes_delta']} B; log line {'yes' if logged else 'no'}")
            if rc != 0:
                raise StepError(f"exited with status {rc} (stderr: {tail(child.stderr_path)})")
        except (StepError, RuntimeError, ValueError) as exc:
            entry["error"] = str(exc)
            self.problem(f"leak {mode} neutracerd: {exc}")
        finally:
            if child is not None:
                child.kill()
            shutil.rmtree(sync, ignore_errors=True)
        if entry.get("reported") is False:
            self.problem(f"leak {mode}: neutracerd did not report it: {entry.get('evidence')}")
        self.log(f"leak {mode:5s} neutracerd       : wall {fmt(entry.get('wall_s'))} s, reported "
                 f"{entry.get('reported')} {entry.get('evidence', '')}")
        return entry

    def leak_section(self):
        modes = self.args.leak_modes
        for mode in modes:
            self.data["leak"].append(self.leak_plain(mode, "plain"))
            self.save()
        done = 0
        try:
            with self.daemon_session("leak-neutracerd"):
                for mode in modes:
                    self.data["leak"].append(self.leak_neutracerd(mode))
                    done += 1
                    self.save()
        except StepError as exc:
            self.problem(f"leak neutracerd phase: {exc}")
            for mode in modes[done:]:
                self.data["leak"].append({"mode": mode, "tool": "neutracerd", "reported": None,
                                          "error": f"daemon session failed: {exc}"})
        self.check_no_daemon("leak compute-sanitizer")
        for mode in modes:
            if self.sanitizer:
                self.data["leak"].append(self.leak_plain(mode, "compute-sanitizer"))
            else:
                self.data["leak"].append({"mode": mode, "tool": "compute-sanitizer",
                                          "reported": None,
                                          "evidence": "compute-sanitizer not found: n/a"})
            self.save()

    # -------------------------------------------------------------------- paired

    def paired_section(self, leak_reserve):
        """paired.py's measurement for the selected workloads (--method paired)."""
        a = self.args
        togglers = list(a.paired_togglers)
        fake = [sys.executable, os.path.join(HERE, "fake.py")]
        symhits = None
        if "bare" in togglers:
            if self.dry:
                symhits = fake + ["symhits"]
            elif os.path.isfile(a.symhits) and os.access(a.symhits, os.X_OK):
                symhits = [os.path.abspath(a.symhits)]
            else:
                self.problem(f"{a.symhits} not found (make -C tests/bench/gpu/launch_cost "
                             "symhits): no bare rows")
                togglers.remove("bare")
        extra = ""
        if a.daemon_config:
            with open(a.daemon_config) as f:
                extra = f.read()
        allowed = os.sched_getaffinity(0)
        try:
            settings = paired.Settings(
                outdir=os.path.join(self.outdir, "paired"),
                daemon_cmd=fake + ["daemon"] if self.dry else [self.binary],
                daemon_env=self.daemon_env(), cuda_cmd=self.cuda_cmd, symhits_cmd=symhits,
                python=sys.executable if self.dry else a.python, workload_env=self.workload_env(),
                port=self.port, extra_config=extra, seconds=a.paired_seconds,
                warmup=a.paired_warmup,
                daemon_cpus=paired.parse_cpus(a.daemon_cpus, allowed=allowed),
                workload_cpus=paired.parse_cpus(a.workload_cpus, allowed=allowed), fake=self.dry,
                budget_minutes=a.budget_minutes, deadline=self.hard_deadline - leak_reserve,
                command=self.data["command"])
        except paired.SetupError as exc:
            raise SetupError(str(exc))

        def on_row(report):
            self.data["paired"] = report
            paired.write_report(settings.outdir, report)
            self.save()

        self.log(f"paired: {', '.join(self.workloads())} x {', '.join(togglers)}, "
                 f"{a.paired_seconds} s each")
        report = paired.run_matrix(settings, self.workloads(), togglers, log=self.log,
                                   on_row=on_row)
        on_row(report)
        for r in report["rows"]:
            if r["status"] not in ("ok", "skipped"):
                self.problem(f"paired {r['workload']} / {r['toggler']}: {r.get('error')} "
                             f"(logs {settings.outdir}/{r['workload']}-{r['toggler']}/)")
        if report["skipped"]:
            self.data["cut_reason"] = "skipped for the budget: " + "; ".join(report["skipped"])
            self.problem(self.data["cut_reason"])
        if report.get("fatal"):
            self.problem(f"paired: {report['fatal']}")

    # -------------------------------------------------------------------- main

    def run(self):
        self.setup()
        reps = self.args.reps
        leak_reserve = self.args.leak_reserve_s if "leak" in self.args.sections else 0
        if "bench" in self.args.sections and self.args.method == "paired":
            self.paired_section(leak_reserve)
        elif "bench" in self.args.sections:
            for rnd in range(1, reps + 1):
                if self.data["round_seconds"]:
                    estimate = 1.1 * max(self.data["round_seconds"])
                    if estimate + leak_reserve > self.remaining():
                        self.data["cut_reason"] = (
                            f"stopped after {rnd - 1} round(s): another round (~{estimate:.0f} s) "
                            f"and the leak section (~{leak_reserve:.0f} s) would pass the "
                            f"{self.args.budget_minutes} min budget")
                        self.problem(self.data["cut_reason"])
                        break
                t_round = time.monotonic()
                self.log(f"===== round {rnd} of {reps} =====")
                self.run_round(rnd)
                self.data["round_seconds"].append(round(time.monotonic() - t_round, 1))
                self.data["rounds_done"] = rnd
                self.save()
        if "leak" in self.args.sections:
            self.log("===== leak =====")
            self.leak_section()

    def cleanup(self):
        if self.daemon is not None:
            stop = self.stop_daemon()
            if self.session is not None and stop:
                self.session.update(stop)
        self.stop_holder()
        if self.progstats:
            self.progstats.close()
        if self.state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary", help="neutracerd binary (its folder's lib/ goes on the daemon's "
                   "LD_LIBRARY_PATH if present); ignored with --dry-run")
    p.add_argument("outdir")
    p.add_argument("--reps", type=int, help="rounds (default 3; 1 with --quick)")
    p.add_argument("--quick", action="store_true",
                   help="smaller workloads and 1 round (about 2 min): a smoke test")
    p.add_argument("--dry-run", action="store_true",
                   help="stand-ins instead of the GPU programs, the daemon and compute-sanitizer")
    p.add_argument("--standin", metavar="DIR",
                   help="a dry run with the REAL daemon (BINARY, as root) and the stand-in "
                   "driver: DIR holds neutracer-scenario and libcuda.so.1 (e.g. "
                   "build/tests/standin); the raw and leak programs become scenario runs")
    p.add_argument("--workloads", default=",".join(WORKLOAD_ORDER),
                   help="comma-separated subset of raw,eager,cnn,transformer")
    p.add_argument("--sections", default="bench,leak", help="bench, leak or both (default)")
    p.add_argument("--method", choices=["rounds", "paired"], default="rounds",
                   help="rounds (default): fresh processes per condition; paired: paired.py's "
                   "on/off blocks inside one process per workload and toggler")
    p.add_argument("--paired-seconds", type=float, default=25.0,
                   help="--method paired: each process's run (default 25)")
    p.add_argument("--paired-warmup", type=float, default=6.0,
                   help="--method paired: seconds left out at the start of each run")
    p.add_argument("--paired-togglers", default="daemon,bare,profiler",
                   help="--method paired: of daemon,bare,profiler (default all three)")
    p.add_argument("--symhits", default=os.path.join(HERE, "launch_cost", "symhits"),
                   help="--method paired: the bare toggler's launch_cost/symhits")
    p.add_argument("--daemon-cpus", default="0-1", help="--method paired: daemon and symhits")
    p.add_argument("--workload-cpus", default="2-", help="--method paired: the workload")
    p.add_argument("--leak-modes", default="exit,reset",
                   help="leak program endings: exit (return from main), reset (cudaDeviceReset "
                   "first); default both")
    p.add_argument("--leak-allocs", type=int, default=100)
    p.add_argument("--leak-mib", type=int, default=4)
    for name, (full, quick) in SIZES.items():
        if name != "reps":
            p.add_argument("--" + name.replace("_", "-"), type=int,
                           help=f"default {full} ({quick} with --quick)")
    p.add_argument("--port", type=int, default=19557)
    p.add_argument("--no-profiler", action="store_true",
                   help="skip the torch.profiler phase (its cells become n/a)")
    p.add_argument("--daemon-config", default=None,
                   help="config file for the daemon (default none: built-in defaults, i.e. "
                        "adaptive launch counting); e.g. one with cuda: {launch_counting: exact}")
    p.add_argument("--scan-interval", default=None, help="daemon --scan-interval (default 2s; "
                   "500ms with --dry-run)")
    p.add_argument("--budget-minutes", type=float, default=8.5,
                   help="hard limit for the whole run: no round starts that would not finish "
                   "(with the leak section) before it, and every wait stops at it (default 8.5)")
    p.add_argument("--leak-reserve-s", type=float, default=75.0,
                   help="time kept for the leak section when deciding to start a round")
    p.add_argument("--no-holder", action="store_true",
                   help="do not keep a process mapping libcuda.so.1 during daemon sessions")
    p.add_argument("--python", default=sys.executable, help="interpreter with torch")
    p.add_argument("--progstats", default=None, metavar="BINARY",
                   help="tests/bench/gpu/launch_cost/progstats: record each BPF program's hits "
                        "and run time during every neutracerd run (go to RESULT)")
    p.add_argument("--nvcc", default=None)
    p.add_argument("--sanitizer", default=None, help="compute-sanitizer path")
    p.add_argument("--ready-timeout", type=float, default=180.0)
    p.add_argument("--run-timeout", type=float, default=240.0)
    p.add_argument("--workload-timeout", type=float, default=600.0,
                   help="how long a workload waits for each file from run.py")
    p.add_argument("--sanitizer-timeout", type=float, default=180.0)
    p.add_argument("--stop-timeout", type=float, default=90.0,
                   help="seconds to wait for the daemon to exit after SIGTERM")
    args = p.parse_args(argv)
    for name, (full, quick) in SIZES.items():
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)
    if args.scan_interval is None:
        args.scan_interval = "500ms" if args.dry_run else "2s"
    args.workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    bad = [w for w in args.workloads if w not in WORKLOAD_ORDER]
    if bad:
        p.error(f"unknown workloads {bad}; choose from {WORKLOAD_ORDER}")
    args.sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    if not set(args.sections) <= {"bench", "leak"} or not args.sections:
        p.error("--sections takes bench, leak or bench,leak")
    args.leak_modes = [m.strip() for m in args.leak_modes.split(",") if m.strip()]
    if not set(args.leak_modes) <= {"exit", "reset"} or not args.leak_modes:
        p.error("--leak-modes takes exit, reset or exit,reset")
    if args.reps < 1:
        p.error("--reps must be at least 1")
    args.paired_togglers = [t.strip() for t in args.paired_togglers.split(",") if t.strip()]
    if not args.paired_togglers or set(args.paired_togglers) - set(paired.TOGGLERS):
        p.error(f"--paired-togglers takes some of {paired.TOGGLERS}")
    if args.method == "paired" and args.standin:
        p.error("--method paired has no --standin mode (use --dry-run)")
    if args.method == "paired" and args.paired_seconds <= args.paired_warmup:
        p.error("--paired-seconds must be longer than --paired-warmup")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.makedirs(args.outdir, exist_ok=True)
    runner = Runner(args)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    status = 0
    try:
        runner.run()
    except SetupError as exc:
        runner.log(f"setup error: {exc}")
        runner.data["fatal"] = f"setup: {exc}"
        runner.data["problems"].append(f"setup error: {exc}")
        status = 2
    except Deadline as exc:
        runner.data["fatal"] = str(exc)
        runner.problem(f"stopped: {exc}")
    except KeyboardInterrupt as exc:
        runner.data["fatal"] = f"interrupted ({exc})"
        runner.problem(f"interrupted ({exc})")
        status = 130
    finally:
        try:
            runner.cleanup()
        finally:
            runner.data["finished"] = now_iso()
            runner.save()
    if status == 0:
        status = exit_status(runner.data)
    with open(os.path.join(runner.outdir, "bench.md")) as f:
        print(f.read())
    runner.log(f"wrote {runner.outdir}/bench.json and bench.md; exit status {status}")
    return status


if __name__ == "__main__":
    sys.exit(main())
