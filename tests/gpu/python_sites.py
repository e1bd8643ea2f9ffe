#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A PyTorch program's alerts name its own lines, on a real GPU (issue 17).

    python3 tests/gpu/python_sites.py NEUTRACERD_BINARY OUTDIR [--seconds 12] [--defaults]

Starts neutracerd (fast leak settings, hang call threshold 2 s, exact launch counting with 1
launch in 100 sampled, a 500 ms scan; call sites on by default; with --defaults: no config and
no flags, the shipped defaults, where --seconds must exceed the 1 minute hang threshold) and runs PyTorch processes, one after the other
(`--cases`, all by default):
- alloc: `ask_too_much()` asks for more memory than the GPU has (torch.empty, caught
  OutOfMemoryError) on its marked line, then `grow()` keeps a new 64 MiB tensor every 0.2 s for
  `--seconds` on its marked line. The site with the failed allocation and the site holding the
  live ones must be summarised by those functions and lines, and the OOM and leak alerts the
  daemon logs must name them (the probes take the Python frames at each allocation);
- hang: `wait_for_gpu()` queues a GPU sleep of about `--seconds` (torch.cuda._sleep) and calls
  torch.cuda.synchronize() on its marked line. While it waits, the process's sites must carry
  the waiting thread's Python frames (PyTorch's own first, then `wait_for_gpu` at that line,
  `child` under it), the site's summary must name `wait_for_gpu` there, and so must the hang
  alert (frames read from the process's memory while it waits).
- leak_list, leak_graph, leak_varying: the seeds' two leaks of detector_cases.py (tensors kept
  in a list; a running sum that keeps every step's autograd graph) and a leak beside a training
  step of varying batch size. Within 30 s of the first leak alert, the allocator view's leak
  alert (docs/allocator-view.md) must name the case's line marked `a leaking line` first; the
  workload runs 60 s, then is stopped;
- cnn: the ResNet-like training step of tests/bench/gpu/torch_workloads.py for `--seconds`. Its
  sampled launches must be summarised by the model's own code: some by `forward`, and more than
  a fifth of them by torch_workloads.py lines (backward's launches come from autograd's thread,
  which runs no Python).
Writes OUTDIR/result.md, OUTDIR/<case>.sites.json, OUTDIR/daemon.log, OUTDIR/final.metrics.
Exit status 0: every check holds; 1: a check failed; 2: setup error. Root, CPython 3.11+; no
other neutracerd may run.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from nt_common import fetch, parse_prometheus, wait_for  # noqa: E402

SEEDS = os.path.join(HERE, "detector_cases.py")
LEAK_CASES = ("leak_list", "leak_graph", "leak_varying")
CNN = os.path.join(HERE, "..", "bench", "gpu", "torch_workloads.py")

PORT = 19559
# Exact launch counting and 1 launch in 100 sampled: a 12 s CNN run gets thousands of launch
# samples (the default, adaptive counting and 1 in 1000, gives about one a second).
CONFIG = ("detectors:\n"
          "  leak: {window: 1s, windows: 3, min_growth_bytes: 1048576, sample_step_bytes: 1048576}\n"
          "  hang: {call_threshold: 2s}\n"
          "cuda: {launch_counting: exact}\n"
          "stacks: {launch_sample_every: 100}\n")


def ask_too_much(torch):
    try:
        torch.empty(1 << 50, dtype=torch.uint8, device="cuda")  # the failing line
    except torch.cuda.OutOfMemoryError:
        return True
    return False


def grow(torch, seconds):
    kept = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        kept.append(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))  # the leaking line
        time.sleep(0.2)
    return kept


def wait_for_gpu(torch, cycles):
    torch.cuda._sleep(cycles)
    torch.cuda.synchronize()  # the waiting line


def child(case, go, seconds):
    import torch  # only in the child: the runner needs no torch

    torch.ones(1, device="cuda")
    torch.cuda.synchronize()
    print(f"READY {os.getpid()} {sys.version_info.major}.{sys.version_info.minor}", flush=True)
    while not os.path.exists(go):
        time.sleep(0.01)
    if case == "alloc":
        print(f"OOM {ask_too_much(torch)}", flush=True)
        kept = grow(torch, seconds)
        print(f"GROWN {len(kept)}", flush=True)
        time.sleep(seconds)  # alive, holding them, while the runner reads its sites
    else:
        wait_for_gpu(torch, int(seconds * 2.0e9))  # cycles at about 2 GHz
    print("DONE", flush=True)


def marked_lines(mark, path=__file__):
    with open(os.path.abspath(path)) as source:
        found = [number for number, text in enumerate(source, 1)
                 if text.rstrip().endswith(mark) and "torch." in text]
    if not found:
        raise RuntimeError(f"the line marked {mark!r} is missing from {path}")
    return found


def marked_line(mark):
    return marked_lines(mark)[0]


def scrape():
    try:
        return parse_prometheus(fetch(f"http://127.0.0.1:{PORT}/metrics"))
    except (RuntimeError, ValueError):
        return None


def sites_of(pid):
    try:
        return json.loads(fetch(f"http://127.0.0.1:{PORT}/api/v1/processes/{pid}/sites"))
    except (RuntimeError, ValueError):
        return None


def alert_line(log_path, words):
    with open(log_path) as text:
        return next((l.strip() for l in text if "alert:" in l and all(w in l for w in words)),
                    None)


def check_alloc(pid, outdir, log_path, seconds, checks):
    base = os.path.basename(__file__)
    failing, leaking = marked_line("# the failing line"), marked_line("# the leaking line")

    def found():
        document = sites_of(pid)
        if not document:
            return None
        failed = next((s for s in document["sites"] if s["counts"]["failed_allocations"]), None)
        live = max(document["sites"], key=lambda s: s["counts"]["live_bytes"], default=None)
        return (document, failed, live) if failed and live and live["counts"]["live_bytes"] else None
    document, failed, live = wait_for(found, seconds + 10, "the failed and the live sites")
    with open(os.path.join(outdir, "alloc.sites.json"), "w") as out:
        json.dump(document, out, indent=1)
    checks.append(("OOM site: ask_too_much at its line",
                   failed.get("summary") == f"ask_too_much ({base}:{failing})",
                   str(failed.get("summary"))))
    checks.append(("leak site: grow at its line",
                   live.get("summary") == f"grow ({base}:{leaking})", str(live.get("summary"))))
    oom = wait_for(lambda: alert_line(log_path, ["ask_too_much ("]), 5, "the OOM alert")
    checks.append(("OOM alert names the line", f"{base}:{failing}" in oom, oom))
    leak = wait_for(lambda: alert_line(log_path, ["grow ("]), seconds + 10,
                    "the leak alert")
    checks.append(("leak alert names the line", f"{base}:{leaking}" in leak, leak))


def check_hang(pid, outdir, log_path, seconds, checks):
    base = os.path.basename(__file__)
    line = marked_line("# the waiting line")

    def waiting():
        document = sites_of(pid)
        site = next((s for s in (document or {}).get("sites", [])
                     if s.get("waiting_python_frames")), None)
        return (document, site) if site else None
    document, site = wait_for(waiting, seconds, "the waiting thread's Python frames")
    with open(os.path.join(outdir, "hang.sites.json"), "w") as out:
        json.dump(document, out, indent=1)
    frames = site["waiting_python_frames"]
    checks.append(("hang site: wait_for_gpu at its line",
                   site.get("summary") == f"wait_for_gpu ({base}:{line})",
                   str(site.get("summary"))))
    mine = next((i for i, f in enumerate(frames) if f.get("function") == "wait_for_gpu"), None)
    checks.append(("the frames hold wait_for_gpu at that line, child() under it",
                   mine is not None and frames[mine].get("line") == line and
                   mine + 1 < len(frames) and frames[mine + 1].get("function") == "child",
                   " < ".join(f"{f.get('function')}:{f.get('line')}" for f in frames)))
    alert = wait_for(lambda: alert_line(log_path, ["wait_for_gpu ("]), seconds,
                     "the hang alert naming wait_for_gpu")
    checks.append(("hang alert names the line", f"{base}:{line}" in alert, alert))


def check_seed_leak(case, pid, outdir, log_path, seconds, checks):
    """The seeds' leaks (detector_cases.py): within 30 s of the first leak alert, the allocator
    view's leak alert names the case's leaking line as its top site."""
    base = os.path.basename(SEEDS)
    lines = marked_lines("a leaking line", SEEDS)
    expected = {f"{case} ({base}:{line})" for line in lines}
    first = wait_for(lambda: alert_line(log_path, ["memory_leak", f"(pid {pid})"]),
                     seconds + 10, f"the leak alert of {case}")
    first_at = time.monotonic()
    alert = wait_for(lambda: alert_line(log_path, ["memory_leak", f"(pid {pid})",
                                                   "allocator view"]),
                     45, f"the allocator view's leak alert of {case}")
    waited = time.monotonic() - first_at
    document = sites_of(pid) or {"sites": []}
    with open(os.path.join(outdir, f"{case}.sites.json"), "w") as out:
        json.dump(document, out, indent=1)
    named = re.search(r" at (\S+ \([^)]*\))", alert)  # its top site; the next ones follow
    checks.append((f"{case}: within 30 s of the first leak alert, the allocator view's alert "
                   f"names a leaking line of {case}",
                   bool(named) and named.group(1) in expected and waited <= 30,
                   f"{waited:.0f} s after the first ({first}); {alert}"))
    ranking = document.get("ranking", {})
    top = (document["sites"] or [{}])[0]
    checks.append((f"{case}: /api/v1/processes/<pid>/sites ranks by the allocator view, a "
                   f"leaking line of {case} first",
                   ranking.get("view") == "allocator" and top.get("summary") in expected,
                   f"ranking {ranking}; first {top.get('summary')} {top.get('allocator')}"))
    memory = json.loads(fetch(f"http://127.0.0.1:{PORT}/api/v1/memory?pid={pid}"))
    with open(os.path.join(outdir, f"{case}.memory.json"), "w") as out:
        json.dump(memory.get("allocator_view"), out)
    segments = (memory.get("allocator_view") or {}).get("segments", [])
    live = sum(1 for seg in segments for block in seg["blocks"] if block["state"] == "live")
    cached = sum(1 for seg in segments for block in seg["blocks"] if block["state"] == "cached")
    checks.append((f"{case}: /api/v1/memory shows live tensor blocks inside segments while the "
                   f"view is open", live > 0,
                   f"{len(segments)} segments, {live} live and {cached} cached blocks drawn"))


def check_cnn(pid, outdir, seconds, checks):
    """The CNN step's sampled launch profile names its model code (torch_workloads.py)."""
    base = os.path.basename(CNN)
    document = wait_for(lambda: (d := sites_of(pid)) and
                        sum(s["counts"]["launch_samples"] for s in d["sites"]) >= 100 and d,
                        seconds + 10, "100 launch samples")
    with open(os.path.join(outdir, "cnn.sites.json"), "w") as out:
        json.dump(document, out, indent=1)
    launching = sorted((s for s in document["sites"] if s["counts"]["launch_samples"]),
                       key=lambda s: -s["counts"]["launch_samples"])
    total = sum(s["counts"]["launch_samples"] for s in launching)
    mine = [s for s in launching if f"({base}:" in (s.get("summary") or "")]
    share = sum(s["counts"]["launch_samples"] for s in mine) / total
    # Python 3.11+ names a method by its qualified name: "build_cnn.<locals>.Block.forward".
    forward = [s for s in mine
               if (s.get("summary") or "").split(" (")[0].split(".")[-1] == "forward"]
    checks.append(("cnn: sampled launches are summarised by the model's forward()",
                   bool(forward), "; ".join(f"{s.get('summary')}: {s['counts']['launch_samples']}"
                                            for s in launching[:8])))
    checks.append(("cnn: share of launch samples named by torch_workloads.py lines (the rest: "
                   "autograd's backward thread, no Python frames)", share > 0.2,
                   f"{share:.1%} of {total}"))


def spawn(case, work, seconds):
    """The case's workload process; it prints READY <pid> and waits for WORK/go."""
    go = os.path.join(work, "go")
    if case in ("alloc", "hang"):
        return subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", case, go,
                                 "--seconds", str(seconds)], stdout=subprocess.PIPE, text=True)
    if case in LEAK_CASES:
        # Long enough for the allocator view to open, age its blocks and see a trend.
        return subprocess.Popen([sys.executable, SEEDS, case, str(max(seconds, 60))],
                                stdout=subprocess.PIPE, text=True,
                                env=dict(os.environ, NT_GO_FILE=go))
    if case == "cnn":
        return subprocess.Popen([sys.executable, CNN, "cnn", "--condition", "neutracerd",
                                 "--sync-dir", work, "--seconds", str(seconds)],
                                stdout=subprocess.PIPE, text=True)
    raise RuntimeError(f"unknown case {case!r}")


def run_case(case, args, log_path, checks):
    work = tempfile.mkdtemp(prefix=f"nt-{case}-")
    workload = spawn(case, work, args.seconds)
    try:
        ready = workload.stdout.readline().split()
        if not ready or ready[0] != "READY":
            raise RuntimeError(f"{case}: workload did not start: {ready}")
        pid = ready[1]
        wait_for(lambda: (s := scrape()) and any(l.get("pid") == pid for _, l, _ in s), 60,
                 f"discovery of pid {pid}")
        time.sleep(6 if args.defaults else 1.5)  # a few scans: its interpreter found and probed
        open(os.path.join(work, "go"), "w").close()
        if case == "alloc":
            check_alloc(pid, args.outdir, log_path, args.seconds, checks)
        elif case == "hang":
            check_hang(pid, args.outdir, log_path, args.seconds, checks)
        elif case == "cnn":
            check_cnn(pid, args.outdir, args.seconds, checks)
            open(os.path.join(work, "release"), "w").close()
        else:
            check_seed_leak(case, pid, args.outdir, log_path, args.seconds, checks)
            workload.kill()
        workload.wait(timeout=max(120, 2 * args.seconds + 30))  # alloc grows, then holds
    finally:
        if workload.poll() is None:
            workload.kill()
        shutil.rmtree(work, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary", nargs="?")
    p.add_argument("outdir", nargs="?")
    p.add_argument("--seconds", type=float, default=12)
    p.add_argument("--cases", default="alloc,hang,leak_list,leak_graph,leak_varying,cnn")
    p.add_argument("--defaults", action="store_true",
                   help="run the daemon with the shipped defaults (then --seconds must exceed "
                        "detectors.hang.call_threshold, 1 minute)")
    p.add_argument("--child", nargs=2, metavar=("CASE", "GO_FILE"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.seconds)
        return 0
    if not args.binary or not args.outdir:
        p.error("BINARY and OUTDIR are required")
    if args.defaults and args.seconds <= 65:
        p.error("--defaults needs --seconds above 65: the hang case waits past the 1 minute "
                "hang threshold")
    os.makedirs(args.outdir, exist_ok=True)
    config = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    config.write("" if args.defaults else CONFIG)
    config.close()
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(os.path.abspath(args.binary)), "lib")
    if os.path.isdir(lib):
        env["LD_LIBRARY_PATH"] = lib + ":" + env.get("LD_LIBRARY_PATH", "")
    log_path = os.path.join(args.outdir, "daemon.log")
    checks, version = [], f"{sys.version_info.major}.{sys.version_info.minor}"
    with open(log_path, "w") as log:
        flags = [] if args.defaults else ["--scan-interval", "500ms"]
        daemon = subprocess.Popen([args.binary, "--config", config.name, "--listen",
                                   f"127.0.0.1:{PORT}"] + flags,
                                  stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            wait_for(scrape, 30, "the daemon's /metrics")
            for case in args.cases.split(","):
                try:
                    run_case(case, args, log_path, checks)
                except RuntimeError as exc:
                    checks.append((str(exc), False, ""))
            with open(os.path.join(args.outdir, "final.metrics"), "w") as out:
                out.write(fetch(f"http://127.0.0.1:{PORT}/metrics"))  # for a failure's story
        finally:
            daemon.terminate()
            daemon.wait(timeout=120)
            os.unlink(config.name)
    lines = [f"# Python call sites on a GPU (Python {version})", "",
             "| check | ok | seen |", "|---|---|---|"]
    lines += [f"| {name} | {'yes' if ok else '**NO**'} | {seen.replace('|', '/')} |"
              for name, ok, seen in checks]
    with open(os.path.join(args.outdir, "result.md"), "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if checks and all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
