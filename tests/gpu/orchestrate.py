#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs one workload from workloads.py against a running neutracerd and saves the scrapes.

Usage: orchestrate.py --workload NAME --outdir DIR [--url http://127.0.0.1:19555]

Follows the READY / CHECKPOINT / DONE protocol described in workloads.py:
  READY pid      -> wait until /metrics lists the pid (neutracer_cuda_memory_used_bytes) and
                    neutracer_attached_libraries >= 1, sleep 0.5 s, create the go file.
  CHECKPOINT x   -> wait for stable metrics, save DIR/NAME.x.metrics and DIR/NAME.x.kernels.json,
                    create continue_x.
  DONE           -> same, saved as DIR/NAME.metrics and DIR/NAME.kernels.json; create exit.
Writes DIR/NAME.run.json with the outcome; exit status 0 only if every step succeeded.
"""
import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from nt_common import DEFAULT_URL, fetch, parse_prometheus, select  # noqa: E402

STABLE_METRICS = (
    "neutracer_cuda_kernel_launches_total",
    "neutracer_cuda_memory_used_bytes",
    "neutracer_cuda_memory_allocations_total",
    "neutracer_cuda_memory_frees_total",
    "neutracer_cuda_memcpy_bytes_total",
    "neutracer_cuda_memcpy_calls_total",
)


class RunError(Exception):
    pass


def log(message):
    print(f"[orchestrate {time.strftime('%H:%M:%S')}] {message}", flush=True)


def pid_fingerprint(text, pid):
    samples = parse_prometheus(text)
    rows = []
    for name, labels, value in samples:
        if name in STABLE_METRICS and labels.get("pid") == str(pid):
            rows.append((name, tuple(sorted(labels.items())), value))
    return sorted(rows)


def scrape_stable(url, pid, settle, interval, max_wait):
    """Sleep `settle`, then scrape until two scrapes `interval` apart agree for this pid."""
    time.sleep(settle)
    deadline = time.monotonic() + max_wait
    previous = fetch(url + "/metrics")
    while True:
        time.sleep(interval)
        current = fetch(url + "/metrics")
        if pid_fingerprint(current, pid) == pid_fingerprint(previous, pid):
            kernels = fetch(url + "/api/v1/kernels")
            # Take /metrics again so both files come from the same (stable) state.
            metrics = fetch(url + "/metrics")
            if pid_fingerprint(metrics, pid) == pid_fingerprint(current, pid):
                return metrics, kernels, True
            current = metrics
        if time.monotonic() > deadline:
            return current, fetch(url + "/api/v1/kernels"), False
        previous = current


def wait_discovered(url, pid, timeout, proc):
    deadline = time.monotonic() + timeout
    last_error = "no scrape yet"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RunError(f"workload exited with status {proc.returncode} before it was discovered")
        try:
            samples = parse_prometheus(fetch(url + "/metrics"))
            listed = bool(select(samples, "neutracer_cuda_memory_used_bytes", pid=pid))
            libs = select(samples, "neutracer_attached_libraries")
            attached = libs[0][1] if libs else 0
            if listed and attached >= 1:
                return attached
            last_error = f"pid listed={listed}, attached_libraries={attached}"
        except (RuntimeError, ValueError) as exc:
            last_error = str(exc)
        time.sleep(0.1)
    raise RunError(f"pid {pid} not discovered by neutracerd within {timeout:.0f}s ({last_error})")


def reader_thread(stream, lines, copy_path):
    with open(copy_path, "w", encoding="utf-8") as copy:
        for raw in iter(stream.readline, ""):
            copy.write(raw)
            copy.flush()
            lines.put(raw.rstrip("\n"))
    lines.put(None)


def next_line(lines, timeout, what, proc):
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RunError(f"timed out after {timeout:.0f}s waiting for {what}")
        try:
            line = lines.get(timeout=min(remaining, 1.0))
        except queue.Empty:
            continue
        if line is None:
            proc.wait(timeout=10)
            raise RunError(f"workload exited (status {proc.returncode}) while waiting for {what}")
        if line.startswith(("READY", "CHECKPOINT", "DONE")):
            return line
        log(f"workload: {line}")


def touch(path):
    with open(path, "w"):
        pass


def workload_env():
    env = dict(os.environ)
    env.setdefault("CUDA_MODULE_LOADING", "LAZY")
    env["PYTHONUNBUFFERED"] = "1"
    # Reservations through cudaMalloc (not VMM), so memory_reserved() is comparable.
    env.pop("PYTORCH_ALLOC_CONF", None)
    env["PYTORCH_CUDA_ALLOC_CONF"] = os.environ.get("NT_TORCH_ALLOC_CONF", "expandable_segments:False")
    return env


def run(args):
    outdir = os.path.abspath(args.outdir)
    os.makedirs(outdir, exist_ok=True)
    name = args.workload
    truth = os.path.join(outdir, f"{name}.truth.json")
    for stale in (truth,):
        if os.path.exists(stale):
            os.remove(stale)
    sync_dir = tempfile.mkdtemp(prefix=f"nt_{name}_")
    env = workload_env()
    env["TRITON_CACHE_DIR"] = os.path.join(sync_dir, "triton_cache")  # fresh compile every run
    cmd = [args.python, "-u", os.path.join(HERE, "workloads.py"), name, "--sync-dir", sync_dir,
           "--truth", truth, "--trace-dir", outdir, "--timeout", str(args.workload_timeout)]
    if args.iterations:
        cmd += ["--iterations", str(args.iterations)]
    log(f"{name}: starting: {' '.join(cmd)}")
    stderr = open(os.path.join(outdir, f"{name}.stderr"), "w")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env,
                            start_new_session=True)
    lines = queue.Queue()
    threading.Thread(target=reader_thread,
                     args=(proc.stdout, lines, os.path.join(outdir, f"{name}.stdout")),
                     daemon=True).start()
    record = {"workload": name, "status": "error", "checkpoints": [], "stable": {}}
    started = time.monotonic()
    try:
        line = next_line(lines, args.ready_timeout, "READY", proc)
        parts = line.split()
        if parts[0] != "READY" or len(parts) != 2 or not parts[1].isdigit():
            raise RunError(f"expected 'READY <pid>', got {line!r}")
        pid = int(parts[1])
        record["pid"] = pid
        log(f"{name}: READY pid {pid}; waiting for neutracerd to attach")
        attached = wait_discovered(args.url, pid, args.timeout, proc)
        log(f"{name}: discovered (attached_libraries={attached:g}); go")
        time.sleep(0.5)
        touch(os.path.join(sync_dir, "go"))
        while True:
            line = next_line(lines, args.phase_timeout, "CHECKPOINT or DONE", proc)
            if line.startswith("CHECKPOINT"):
                cp = line.split(None, 1)[1].strip()
                metrics, kernels, stable = scrape_stable(args.url, pid, args.settle, 0.25, 10)
                base = f"{name}.{cp}"
                record["checkpoints"].append(cp)
            elif line.strip() == "DONE":
                cp = "done"
                metrics, kernels, stable = scrape_stable(args.url, pid, args.settle, 0.25, 10)
                base = name
            else:
                raise RunError(f"unexpected line {line!r}")
            record["stable"][cp] = stable
            if not stable:
                log(f"{name}: warning: metrics for pid {pid} still changing at {cp}")
            with open(os.path.join(outdir, base + ".metrics"), "w", encoding="utf-8") as f:
                f.write(metrics)
            with open(os.path.join(outdir, base + ".kernels.json"), "w", encoding="utf-8") as f:
                f.write(kernels)
            log(f"{name}: scraped at {cp}")
            if cp == "done":
                touch(os.path.join(sync_dir, "exit"))
                break
            touch(os.path.join(sync_dir, f"continue_{cp}"))
        try:
            proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            raise RunError(f"workload did not exit within {args.timeout:.0f}s after the exit file")
        record["exit_code"] = proc.returncode
        if proc.returncode != 0:
            raise RunError(f"workload exited with status {proc.returncode}")
        if not os.path.exists(truth):
            raise RunError(f"workload did not write {truth}")
        record["status"] = "ok"
    except (RunError, RuntimeError, ValueError) as exc:
        record["error"] = str(exc)
        log(f"{name}: FAILED: {exc} (see {outdir}/{name}.stderr)")
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait()
        stderr.close()
        record["seconds"] = round(time.monotonic() - started, 1)
        with open(os.path.join(outdir, f"{name}.run.json"), "w", encoding="utf-8") as f:
            json.dump(record, f, indent=2)
        shutil.rmtree(sync_dir, ignore_errors=True)
    return 0 if record["status"] == "ok" else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--outdir", required=True)
    parser.add_argument("--url", default=DEFAULT_URL)
    parser.add_argument("--python", default=sys.executable, help="interpreter for workloads.py")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for each wait")
    parser.add_argument("--ready-timeout", type=float, default=180.0,
                        help="seconds to wait for READY (covers imports and nvcc)")
    parser.add_argument("--phase-timeout", type=float, default=180.0,
                        help="seconds to wait for the next CHECKPOINT/DONE (covers compiles)")
    parser.add_argument("--workload-timeout", type=float, default=300.0,
                        help="how long the workload itself waits for each runner file")
    parser.add_argument("--settle", type=float, default=0.6,
                        help="seconds to sleep before scraping (>= 2 scan intervals)")
    parser.add_argument("--iterations", type=int, default=0)
    sys.exit(run(parser.parse_args()))


if __name__ == "__main__":
    main()
