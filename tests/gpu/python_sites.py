#!/usr/bin/env python3
"""A PyTorch program's alerts name its own lines, on a real GPU (issue 17).

    python3 tests/gpu/python_sites.py NEUTRACERD_BINARY OUTDIR [--seconds 12]

Starts neutracerd (fast leak settings, hang call threshold 2 s; call sites on by default) and
runs two PyTorch processes, one after the other:
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
Writes OUTDIR/result.md, OUTDIR/<case>.sites.json, OUTDIR/daemon.log. Exit status 0: every
check holds; 1: a check failed; 2: setup error. Root, CPython 3.11+; no other neutracerd may run.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from nt_common import fetch, parse_prometheus, wait_for  # noqa: E402

PORT = 19559
CONFIG = ("detectors:\n"
          "  leak: {window: 1s, windows: 3, min_growth_bytes: 1048576, sample_step_bytes: 1048576}\n"
          "  hang: {call_threshold: 2s}\n")


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


def marked_line(mark):
    with open(os.path.abspath(__file__)) as source:
        for number, text in enumerate(source, 1):
            if text.rstrip().endswith(mark) and "torch." in text:
                return number
    raise RuntimeError(f"the line marked {mark!r} is missing")


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


def run_case(case, args, log_path, checks):
    go = tempfile.mktemp(prefix=f"nt-{case}-go-")
    workload = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", case, go,
                                 "--seconds", str(args.seconds)], stdout=subprocess.PIPE, text=True)
    try:
        ready = workload.stdout.readline().split()
        if not ready or ready[0] != "READY":
            raise RuntimeError(f"{case}: workload did not start: {ready}")
        pid = ready[1]
        wait_for(lambda: (s := scrape()) and any(l.get("pid") == pid for _, l, _ in s), 60,
                 f"discovery of pid {pid}")
        time.sleep(1.5)  # a few scans: its interpreter found and given to the probes
        open(go, "w").close()
        (check_alloc if case == "alloc" else check_hang)(pid, args.outdir, log_path,
                                                          args.seconds, checks)
        workload.wait(timeout=120)
        return ready[2]
    finally:
        if workload.poll() is None:
            workload.kill()
        if os.path.exists(go):
            os.unlink(go)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary", nargs="?")
    p.add_argument("outdir", nargs="?")
    p.add_argument("--seconds", type=float, default=12)
    p.add_argument("--cases", default="alloc,hang")
    p.add_argument("--child", nargs=2, metavar=("CASE", "GO_FILE"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.seconds)
        return 0
    if not args.binary or not args.outdir:
        p.error("BINARY and OUTDIR are required")
    os.makedirs(args.outdir, exist_ok=True)
    config = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    config.write(CONFIG)
    config.close()
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(os.path.abspath(args.binary)), "lib")
    if os.path.isdir(lib):
        env["LD_LIBRARY_PATH"] = lib + ":" + env.get("LD_LIBRARY_PATH", "")
    log_path = os.path.join(args.outdir, "daemon.log")
    checks, version = [], "?"
    with open(log_path, "w") as log:
        daemon = subprocess.Popen([args.binary, "--config", config.name, "--listen",
                                   f"127.0.0.1:{PORT}", "--scan-interval", "500ms"],
                                  stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            wait_for(scrape, 30, "the daemon's /metrics")
            for case in args.cases.split(","):
                try:
                    version = run_case(case, args, log_path, checks)
                except RuntimeError as exc:
                    checks.append((str(exc), False, ""))
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
