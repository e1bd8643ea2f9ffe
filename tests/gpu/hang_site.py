#!/usr/bin/env python3
"""A hang on a real GPU names the Python line that waits (issue 17).

    python3 tests/gpu/hang_site.py NEUTRACERD_BINARY OUTDIR [--seconds 12]

Starts neutracerd (hang call threshold 2 s, sites on by default), then a PyTorch process whose
`wait_for_gpu()` queues a GPU sleep of about `--seconds` (torch.cuda._sleep) and calls
torch.cuda.synchronize() on the marked line. While it waits, the process's sites
(/api/v1/processes/<pid>/sites) must carry that thread's Python frames (PyTorch's own first,
then `wait_for_gpu` at the marked line, `child` under it), the site's summary must name
`wait_for_gpu` at that line, and so must the hang alert the daemon logs. Writes OUTDIR/sites.json, OUTDIR/daemon.log, OUTDIR/result.md.
Exit status 0: both hold; 1: a check failed; 2: setup error. Root; no other neutracerd may run.
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
from nt_common import fetch, parse_prometheus  # noqa: E402

PORT = 19559
WAIT_LINE_MARK = "# the waiting line"


def wait_for_gpu(torch, cycles):
    torch.cuda._sleep(cycles)
    torch.cuda.synchronize()  # the waiting line


def child(go, seconds):
    import torch  # only in the child: the runner needs no torch

    torch.ones(1, device="cuda")
    torch.cuda.synchronize()
    print(f"READY {os.getpid()} {sys.version_info.major}.{sys.version_info.minor}", flush=True)
    while not os.path.exists(go):
        time.sleep(0.01)
    wait_for_gpu(torch, int(seconds * 2.0e9))  # cycles at about 2 GHz
    print("DONE", flush=True)


def main_line():
    with open(os.path.abspath(__file__)) as source:
        for number, text in enumerate(source, 1):
            if text.rstrip().endswith(WAIT_LINE_MARK) and "synchronize" in text:
                return number
    raise RuntimeError("the marked line is missing")


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}")


def scrape():
    try:
        return parse_prometheus(fetch(f"http://127.0.0.1:{PORT}/metrics"))
    except (RuntimeError, ValueError):
        return None


def waiting_frames(pid):
    try:
        document = json.loads(fetch(f"http://127.0.0.1:{PORT}/api/v1/processes/{pid}/sites"))
    except (RuntimeError, ValueError):
        return None
    for site in document.get("sites", []):
        if site.get("waiting_python_frames"):
            return document, site
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary", nargs="?")
    p.add_argument("outdir", nargs="?")
    p.add_argument("--seconds", type=float, default=12)
    p.add_argument("--child", metavar="GO_FILE", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child, args.seconds)
        return 0
    if not args.binary or not args.outdir:
        p.error("BINARY and OUTDIR are required")
    os.makedirs(args.outdir, exist_ok=True)
    line = main_line()
    version = "?"
    config = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    config.write("detectors: {hang: {call_threshold: 2s}}\n")
    config.close()
    env = dict(os.environ)
    lib = os.path.join(os.path.dirname(os.path.abspath(args.binary)), "lib")
    if os.path.isdir(lib):
        env["LD_LIBRARY_PATH"] = lib + ":" + env.get("LD_LIBRARY_PATH", "")
    log_path = os.path.join(args.outdir, "daemon.log")
    checks = []
    with open(log_path, "w") as log:
        daemon = subprocess.Popen([args.binary, "--config", config.name, "--listen",
                                   f"127.0.0.1:{PORT}", "--scan-interval", "500ms"],
                                  stdout=log, stderr=subprocess.STDOUT, env=env)
        go = tempfile.mktemp(prefix="nt-hang-go-")
        workload = None
        try:
            wait_for(scrape, 30, "the daemon's /metrics")
            workload = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", go,
                                         "--seconds", str(args.seconds)],
                                        stdout=subprocess.PIPE, text=True)
            ready = workload.stdout.readline().split()
            if not ready or ready[0] != "READY":
                print(f"workload did not start: {ready}", file=sys.stderr)
                return 2
            pid, version = ready[1], ready[2]
            wait_for(lambda: (s := scrape()) and any(l.get("pid") == pid for _, l, _ in s), 60,
                     f"discovery of pid {pid}")
            open(go, "w").close()
            document, site = wait_for(lambda: waiting_frames(pid), args.seconds,
                                      "the waiting thread's Python frames")
            with open(os.path.join(args.outdir, "sites.json"), "w") as out:
                json.dump(document, out, indent=1)
            frames = site["waiting_python_frames"]
            base = os.path.basename(__file__)
            # The innermost frames are PyTorch's own (torch.cuda.synchronize); the site's
            # summary and the alert name the program's line under them.
            checks.append(("the site's summary names wait_for_gpu at the marked line",
                           site.get("summary") == f"wait_for_gpu ({base}:{line})",
                           str(site.get("summary"))))
            mine = next((i for i, f in enumerate(frames) if f.get("function") == "wait_for_gpu"),
                        None)
            checks.append(("the frames hold wait_for_gpu at that line, child() under it",
                           mine is not None and frames[mine].get("line") == line and
                           mine + 1 < len(frames) and frames[mine + 1].get("function") == "child",
                           " < ".join(f"{f.get('function')}:{f.get('line')}" for f in frames)))

            def hang_alert():
                with open(log_path) as text:
                    return next((l for l in text if "alert:" in l and "wait_for_gpu" in l), None)
            alert = wait_for(hang_alert, args.seconds, "the hang alert naming wait_for_gpu")
            checks.append(("the hang alert names the file's line",
                           f"{os.path.basename(__file__)}:{line}" in alert, alert.strip()))
            workload.wait(timeout=120)
        except RuntimeError as exc:
            checks.append((str(exc), False, ""))
        finally:
            if workload and workload.poll() is None:
                workload.kill()
            daemon.terminate()
            daemon.wait(timeout=120)
            os.unlink(config.name)
            if os.path.exists(go):
                os.unlink(go)
    lines = [f"# Hang site on a GPU (Python {version})", "",
             "| check | ok | seen |", "|---|---|---|"]
    lines += [f"| {name} | {'yes' if ok else '**NO**'} | {seen.replace('|', '/')} |"
              for name, ok, seen in checks]
    with open(os.path.join(args.outdir, "result.md"), "w") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if checks and all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
