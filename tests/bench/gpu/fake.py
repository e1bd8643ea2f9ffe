#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Stand-ins for run.py --dry-run (no GPU, no root): the daemon, the nvcc-built program,
compute-sanitizer and the libcuda holder. Standard library only.

    fake.py daemon --config X --listen HOST:PORT --scan-interval 2s [--log-level L] [...]
    fake.py cuda launch N WARMUP SYNC_DIR [TIMEOUT]        (same CLI as nt_cuda_bench)
    fake.py cuda chunked SECONDS CHUNK WARMUP SYNC_DIR [TIMEOUT]
    fake.py symhits --lib PATH --sym a,b --pid PID [--perf|--multi]   (launch_cost/symhits)
    fake.py cuda leak COUNT BYTES SYNC_DIR|- exit|reset [TIMEOUT]
    fake.py sanitizer --tool memcheck --leak-check full PROGRAM ARGS...
    fake.py holder
    fake.py standin launch|leak ...    (same CLI as cuda; drives tests/standin's
                                        neutracer-scenario, for run.py --standin)

They talk through the directory in $NT_BENCH_FAKE_STATE: a fake CUDA process writes
<pid>.json ({"launches", "gpu_bytes", "kernel", "comm"}); the fake daemon "discovers" the live
ones at each scan (so discovery and counts lag by up to one scan, as with the real daemon),
counts processes that exit holding memory, and serves /healthz, /metrics and
/api/v1/processes with the series names run.py reads. The daemon writes daemon.pid there; fake
workloads run slower while it is alive, so the report shows a ratio above 1.

Launch sampling (paired.py, count_error.py): with a config that says `launch_counting:
adaptive`, the fake daemon's launch probes are "on" for the first `launch_sample_period` after
it discovers a process, then for `launch_sample_fraction` of each period at a random place in
it; while they are on, the file probes_on in the state directory holds the slow-down factor
(NT_BENCH_FAKE_PROBE_FACTOR, default 1.06) and the fake chunked workloads sleep that much longer;
at --log-level debug each window is logged when it closes, as the real daemon does:
`pid P: launch probes on from A to B ns (CLOCK_MONOTONIC)`. Its counts are then estimates:
NT_BENCH_FAKE_SAMPLING_ERROR (default 0.002) off the exact count. The fake symhits writes
probes_on (NT_BENCH_FAKE_BARE_FACTOR, default 1.04) from ATTACHED until it exits and counts the
launches the process's state file gained meanwhile.

Knobs (environment): NT_BENCH_FAKE_DROP=K (the daemon counts K launches fewer per process),
NT_BENCH_FAKE_STOP_S (daemon shutdown delay, default 0.5), NT_BENCH_FAKE_FAIL=WORKLOAD (that
workload exits with an error; "raw" for the launch program).
"""
import ctypes
import http.server
import json
import os
import random
import re
import signal
import socketserver
import subprocess
import sys
import threading
import time


def state_dir():
    path = os.environ.get("NT_BENCH_FAKE_STATE", "")
    if not path or not os.path.isdir(path):
        print("fake.py: NT_BENCH_FAKE_STATE must name a directory", file=sys.stderr)
        sys.exit(2)
    return path


def write_state(launches, gpu_bytes, kernel="nt_bench_empty", comm="nt_cuda_bench"):
    path = os.path.join(state_dir(), f"{os.getpid()}.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"pid": os.getpid(), "comm": comm, "launches": launches, "kernel": kernel,
                   "gpu_bytes": gpu_bytes}, f)
    os.replace(path + ".tmp", path)


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited, not yet reaped) is gone for our purposes, as /proc/<pid>/maps is empty.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def daemon_running():
    try:
        with open(os.path.join(state_dir(), "daemon.pid")) as f:
            return alive(int(f.read().strip()))
    except (OSError, ValueError):
        return False


def wait_file(path, timeout):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            print(f"fake.py: timed out waiting for {path}", file=sys.stderr)
            sys.exit(3)
        time.sleep(0.005)


def probe_factor():
    """The slow-down asked for by fake launch probes that are on (1.0 when none are)."""
    try:
        with open(os.path.join(state_dir(), "probes_on")) as f:
            return float(f.read().strip() or 1.0)
    except (OSError, ValueError):
        return 1.0


def set_probes_on(factor):
    """Writes (factor) or removes (None) the probes_on file of the state directory."""
    path = os.path.join(state_dir(), "probes_on")
    if factor is None:
        try:
            os.remove(path)
        except OSError:
            pass
        return
    with open(path + ".tmp", "w") as f:
        f.write(str(factor))
    os.replace(path + ".tmp", path)


def launches_of(pid):
    try:
        with open(os.path.join(state_dir(), f"{pid}.json")) as f:
            return int(json.load(f).get("launches", 0))
    except (OSError, ValueError):
        return 0


# ------------------------------------------------------------------------------------------------
# daemon


def parse_duration(text):
    text = text.strip()
    for suffix, scale in (("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    return float(text)


class FakeDaemon:
    def __init__(self, scan_interval):
        self.scan_interval = scan_interval
        self.lock = threading.Lock()
        self.known = {}  # pid -> state
        self.scans = 0
        self.exits_holding = 0
        self.bytes_at_exit = 0
        self.attached = 0
        self.idle_scans = 0
        self.drop = int(os.environ.get("NT_BENCH_FAKE_DROP", "0"))
        self.sampling_error = None  # set in adaptive mode: counts are estimates

    def scan(self):
        found = {}
        directory = state_dir()
        for name in os.listdir(directory):
            if not name.endswith(".json"):
                continue
            try:
                pid = int(name[:-5])
            except ValueError:
                continue
            if not alive(pid):
                continue
            try:
                with open(os.path.join(directory, name)) as f:
                    found[pid] = json.load(f)
            except (OSError, ValueError):
                continue
        with self.lock:
            for pid, old in self.known.items():
                if pid not in found and old.get("gpu_bytes", 0) > 0:
                    self.exits_holding += 1
                    self.bytes_at_exit += old["gpu_bytes"]
                    print(f"[fake neutracerd] {old.get('comm')} (pid {pid}) exited holding "
                          f"{old['gpu_bytes']} bytes of GPU memory (freed by the driver)",
                          flush=True)
            self.known = found
            if found:
                self.attached, self.idle_scans = 1, 0
            else:
                self.idle_scans += 1
                if self.idle_scans >= 10:
                    self.attached = 0
            self.scans += 1

    def metrics(self):
        with self.lock:
            lines = [
                "# TYPE neutracer_attached_libraries gauge",
                f"neutracer_attached_libraries {self.attached}",
                f"neutracer_attached_probes {112 * self.attached}",
                "# TYPE neutracer_scans_total counter",
                f"neutracer_scans_total {self.scans}",
                f"neutracer_cuda_processes {len(self.known)}",
                f"neutracer_cuda_exits_holding_memory_total {self.exits_holding}",
                f"neutracer_cuda_memory_held_at_exit_bytes_total {self.bytes_at_exit}",
                'neutracer_events_dropped_total{source="ring_buffer"} 0',
                'neutracer_events_dropped_total{source="malformed"} 0',
                "neutracer_probe_attach_errors_total 0",
                'neutracer_bpf_map_update_errors_total{map="launches"} 0',
            ]
            for pid, st in sorted(self.known.items()):
                labels = f'pid="{pid}",comm="{st.get("comm", "x")}"'
                lines.append(f'neutracer_cuda_memory_used_bytes{{{labels},kind="device"}} '
                             f'{st.get("gpu_bytes", 0)}')
                launches = max(0, st.get("launches", 0) - (self.drop if st.get("launches") else 0))
                if self.sampling_error is not None:
                    launches = round(launches * (1 + self.sampling_error))
                if launches:
                    lines.append(f'neutracer_cuda_kernel_launches_total{{{labels},'
                                 f'kernel="{st.get("kernel", "k")}"}} {launches}')
            return "\n".join(lines) + "\n"

    def processes(self):
        with self.lock:
            return json.dumps({"processes": [
                {"pid": pid, "comm": st.get("comm", "x"), "gpu_bytes_in_use": st.get("gpu_bytes", 0),
                 "kernel_launches": st.get("launches", 0)} for pid, st in sorted(self.known.items())
            ]}, indent=2) + "\n"


def read_sampling(config_path):
    """(fraction, period seconds) when the config asks for adaptive launch counting, else None."""
    try:
        with open(config_path) as f:
            text = f.read()
    except (OSError, TypeError):
        return None
    if not re.search(r"launch_counting\s*:\s*adaptive\b", text):
        return None
    m = re.search(r"launch_sample_fraction\s*:\s*([0-9.]+)", text)
    fraction = float(m.group(1)) if m else 0.5
    m = re.search(r"launch_sample_period\s*:\s*([0-9.]+\s*(?:ms|s|m|h)?)", text)
    period = parse_duration(m.group(1)) if m else 2.0
    return (fraction if 0 < fraction < 1 else 0.5), period


def log_line(level, message):
    now = time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
    print(f"[{stamp}.{int(now * 1000) % 1000:03d}] [{level}] {message}", flush=True)


def sampling_windows(fake, fraction, period, debug, stop):
    """The launch probes' on/off schedule of adaptive counting (see the module's doc): from the
    first discovery on, one exactly counted period, then a window per period. A logged window
    always lies inside the time the file said "on" (set before it opens, removed after)."""
    factor = os.environ.get("NT_BENCH_FAKE_PROBE_FACTOR", "1.06")
    length = fraction * period
    pids = []
    while not stop.is_set() and not pids:
        with fake.lock:
            pids = sorted(fake.known)
        stop.wait(0.05)
    if stop.is_set():
        return
    set_probes_on(factor)  # the first period after discovery is counted exactly
    if stop.wait(period):
        set_probes_on(None)
        return
    set_probes_on(None)
    start = time.monotonic()
    while not stop.is_set():
        begin = start + random.uniform(0, period - length)
        end = begin + length
        if stop.wait(max(0.0, begin - 0.03 - time.monotonic())):
            break
        set_probes_on(factor)  # attached shortly before the window opens
        begin = max(begin, time.monotonic())
        if stop.wait(max(0.0, end - time.monotonic())):
            break
        with fake.lock:
            pids = sorted(fake.known) or pids
        if debug:
            for pid in pids:
                log_line("debug", f"pid {pid}: launch probes on from {int(begin * 1e9)} to "
                         f"{int(end * 1e9)} ns (CLOCK_MONOTONIC)")
        stop.wait(0.04)  # removed in the background shortly after
        set_probes_on(None)
        start = max(start + period, time.monotonic())
    set_probes_on(None)


def run_daemon(argv):
    listen, interval = "127.0.0.1:10492", 2.0
    config, level = None, "info"
    i = 0
    while i < len(argv):
        if argv[i] == "--listen":
            listen, i = argv[i + 1], i + 2
        elif argv[i] == "--scan-interval":
            interval, i = parse_duration(argv[i + 1]), i + 2
        elif argv[i] == "--config":
            config, i = argv[i + 1], i + 2
        elif argv[i] == "--log-level":
            level, i = argv[i + 1], i + 2
        elif argv[i] == "--proc-root":
            i += 2
        elif argv[i] == "--version":
            print("neutracerd fake (dry run)")
            return 0
        else:
            i += 1
    try:  # so that run.py's "is another neutracerd running?" check sees us
        ctypes.CDLL(None).prctl(15, b"neutracerd", 0, 0, 0)
    except (OSError, AttributeError):
        pass
    host, port = listen.rsplit(":", 1)
    fake = FakeDaemon(interval)
    stop = threading.Event()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            path = self.path.split("?")[0]
            if path == "/healthz":
                body, ctype = "ok\n", "text/plain"
            elif path == "/metrics":
                body, ctype = fake.metrics(), "text/plain; version=0.0.4"
            elif path == "/api/v1/processes":
                body, ctype = fake.processes(), "application/json"
            else:
                self.send_error(404)
                return
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

    try:
        server = Server((host, int(port)), Handler)
    except OSError as exc:
        print(f"[fake neutracerd] cannot listen on {listen}: {exc}", flush=True)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with open(os.path.join(state_dir(), "daemon.pid"), "w") as f:
        f.write(str(os.getpid()))
    time.sleep(0.3)  # "loading BPF programs"
    fake.scan()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"[fake neutracerd] listening on http://{listen}/metrics, scanning every {interval}s",
          flush=True)
    sampling = read_sampling(config)
    windows = None
    if sampling:
        fake.sampling_error = float(os.environ.get("NT_BENCH_FAKE_SAMPLING_ERROR", "0.002"))
        print(f"[fake neutracerd] adaptive launch counting: {sampling[0]} of every "
              f"{sampling[1]} s", flush=True)
        windows = threading.Thread(target=sampling_windows,
                                   args=(fake, sampling[0], sampling[1], level == "debug", stop),
                                   daemon=True)
        windows.start()
    while not stop.wait(interval):
        fake.scan()
    if windows is not None:
        windows.join(timeout=5)
    print("[fake neutracerd] stopping: detaching probes", flush=True)
    time.sleep(float(os.environ.get("NT_BENCH_FAKE_STOP_S", "0.5")))
    server.shutdown()
    try:
        os.remove(os.path.join(state_dir(), "daemon.pid"))
    except OSError:
        pass
    return 0


# ------------------------------------------------------------------------------------------------
# nt_cuda_bench stand-in


def run_cuda(argv):
    if len(argv) >= 4 and argv[0] == "launch":
        if os.environ.get("NT_BENCH_FAKE_FAIL", "") == "raw":
            print("fake.py: NT_BENCH_FAKE_FAIL=raw", file=sys.stderr)
            return 2
        n, warmup, sync = int(argv[1]), int(argv[2]), argv[3]
        timeout = float(argv[4]) if len(argv) > 4 else 300.0
        time.sleep(0.05)
        write_state(0, 0)
        print(f"READY {os.getpid()}", flush=True)
        wait_file(os.path.join(sync, "go"), timeout)
        ns = 2200.0 * (1.3 if daemon_running() else 1.0) * random.uniform(0.98, 1.02)
        time.sleep(0.1)
        write_state(n + warmup, 0)
        print("RESULT " + json.dumps({"workload": "raw", "pid": os.getpid(), "launches": n,
                                      "warmup": warmup, "total_launches": n + warmup,
                                      "seconds": ns * n / 1e9, "value": ns,
                                      "unit": "ns/launch"}), flush=True)
        wait_file(os.path.join(sync, "release"), timeout)
        return 0
    if len(argv) >= 5 and argv[0] == "chunked":
        if os.environ.get("NT_BENCH_FAKE_FAIL", "") == "raw":
            print("fake.py: NT_BENCH_FAKE_FAIL=raw", file=sys.stderr)
            return 2
        seconds, chunk, warmup, sync = float(argv[1]), int(argv[2]), int(argv[3]), argv[4]
        timeout = float(argv[5]) if len(argv) > 5 else 300.0
        time.sleep(0.05)
        write_state(0, 0)
        print(f"READY {os.getpid()}", flush=True)
        wait_file(os.path.join(sync, "go"), timeout)
        time.sleep(0.05)
        write_state(warmup, 0)
        start = time.monotonic()
        ends = []
        while not ends or ends[-1] < start + seconds:
            target = ends[-1] if ends else start  # absolute times: the bookkeeping is free
            write_state(warmup + chunk * len(ends), 0)
            left = 2200e-9 * chunk
            while left > 1e-12:  # 2.2 µs a launch, stretched by whatever is on meanwhile
                piece = min(left, 0.005)
                target += piece * (1.3 if daemon_running() else 1.0) * probe_factor()
                time.sleep(max(0.0, target - time.monotonic()))
                left -= piece
            ends.append(time.monotonic())
        n = chunk * len(ends)
        print("RESULT " + json.dumps({
            "workload": "raw", "pid": os.getpid(), "launches": n, "iterations": n,
            "warmup": warmup, "total_launches": n + warmup, "seconds": ends[-1] - start,
            "value": (ends[-1] - start) * 1e9 / n, "unit": "ns/launch", "chunk_steps": chunk,
            "chunk_start": start, "chunk_ends": ends}), flush=True)
        wait_file(os.path.join(sync, "release"), timeout)
        return 0
    if len(argv) >= 5 and argv[0] == "leak":
        count, size, sync, mode = int(argv[1]), int(argv[2]), argv[3], argv[4]
        timeout = float(argv[5]) if len(argv) > 5 else 300.0
        time.sleep(0.05)
        write_state(0, 0)
        if sync != "-":
            print(f"READY {os.getpid()}", flush=True)
            wait_file(os.path.join(sync, "go"), timeout)
        time.sleep(0.05)
        write_state(0, count * size)
        print("RESULT " + json.dumps({"workload": "leak", "pid": os.getpid(),
                                      "allocations": count, "bytes_each": size,
                                      "bytes_total": count * size, "alloc_seconds": 0.05,
                                      "reset": mode == "reset"}), flush=True)
        if sync != "-":
            wait_file(os.path.join(sync, "release"), timeout)
        return 0
    print("usage: fake.py cuda launch N WARMUP SYNC_DIR | chunked SECONDS CHUNK WARMUP SYNC_DIR | "
          "leak COUNT BYTES SYNC|- exit|reset", file=sys.stderr)
    return 1


def run_sanitizer(argv):
    """Runs the program after the options; reports a leak only for `leak ... reset` (the real
    tool's leak report needs the context destroyed), so both report paths are exercised."""
    i = 0
    while i < len(argv) and argv[i].startswith("--"):
        i += 2
    program = argv[i:]
    print("========= COMPUTE-SANITIZER (fake)", flush=True)
    time.sleep(0.3)
    rc = subprocess.call(program)
    if "leak" in program and "reset" in program:
        k = program.index("leak")
        count, size = int(program[k + 1]), int(program[k + 2])
        for _ in range(count):
            print(f"========= Leaked {size} bytes at 0x7f0000000000")
        print(f"========= LEAK SUMMARY: {count * size} bytes leaked in {count} allocations")
        print(f"========= ERROR SUMMARY: {count} errors")
    else:
        print("========= ERROR SUMMARY: 0 errors")
    return rc


def run_standin(argv):
    """nt_cuda_bench's protocol over neutracer-scenario and the stand-in libcuda.so.1, so the
    real daemon sees exact launches and allocations (run.py --standin). READY names the
    scenario's pid: the process the daemon traces."""
    scenario = os.environ.get("NT_BENCH_SCENARIO", "")
    if len(argv) >= 4 and argv[0] == "launch":
        n, warmup, sync = int(argv[1]), int(argv[2]), argv[3]
        # relaunch prints no line: the sleep:0 after it marks its end.
        steps = ["ready", f"wait:{sync}/go", f"launch:nt_bench_empty:{warmup}", f"relaunch:{n}",
                 "sleep:0", f"wait:{sync}/release"]
    elif len(argv) >= 5 and argv[0] == "leak":
        count, size, sync = int(argv[1]), int(argv[2]), argv[3]
        n = warmup = 0
        steps = [f"alloc:{size}:{count}"]
        if sync != "-":
            steps = ["ready", f"wait:{sync}/go"] + steps + [f"wait:{sync}/release"]
    else:
        print("usage: fake.py standin launch N WARMUP SYNC | leak COUNT BYTES SYNC|- MODE",
              file=sys.stderr)
        return 1
    proc = subprocess.Popen([scenario] + steps, stdout=subprocess.PIPE, text=True)
    t0 = time.perf_counter()
    for line in proc.stdout:
        line = line.strip()
        if line.startswith("ready "):
            print(f"READY {line.split()[1]}", flush=True)
        elif line.startswith("launch:") and " ok" in line:
            t0 = time.perf_counter()
        elif line.startswith("sleep:0") and " ok" in line:
            seconds = time.perf_counter() - t0
            print("RESULT " + json.dumps({
                "workload": "raw", "pid": proc.pid, "launches": n, "warmup": warmup,
                "total_launches": n + warmup, "seconds": seconds,
                "value": seconds * 1e9 / max(n, 1), "unit": "ns/launch"}), flush=True)
        elif line.startswith("alloc:") and " ok" in line:
            print("RESULT " + json.dumps({
                "workload": "leak", "pid": proc.pid, "allocations": count, "bytes_each": size,
                "bytes_total": count * size, "reset": argv[4] == "reset"}), flush=True)
    return proc.wait()


def run_symhits(argv):
    """launch_cost/symhits for one pid: "attaches" (probes_on), counts the launches the
    process's state file gains, prints the FINAL block on SIGINT / SIGTERM and "detaches"."""
    pid, names, mode, duration = None, "cuLaunchKernel", "multi", 0.0
    factor = os.environ.get("NT_BENCH_FAKE_BARE_FACTOR", "1.04")
    i = 0
    while i < len(argv):
        if argv[i] in ("--lib", "--prefix", "--prog", "--prog-ex", "--set"):
            i += 2
        elif argv[i] == "--object":  # the daemon's launch program: dearer than the bare one
            factor = os.environ.get("NT_BENCH_FAKE_EXACT_FACTOR", "1.06")
            names, i = "launches", i + 2
        elif argv[i] == "--sym":
            names, i = argv[i + 1], i + 2
        elif argv[i] == "--pid":
            pid, i = int(argv[i + 1]), i + 2
        elif argv[i] == "--duration":
            duration, i = float(argv[i + 1]), i + 2
        elif argv[i] in ("--perf", "--multi"):
            mode, i = argv[i][2:], i + 1
        else:
            print(f"fake.py symhits: unknown argument {argv[i]}", file=sys.stderr)
            return 2
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    time.sleep(0.02)  # loading and attaching
    before = launches_of(pid)
    set_probes_on(factor)
    print(f"ATTACHED {len(names.split(','))} {mode}", flush=True)
    deadline = time.monotonic() + duration if duration > 0 else None
    while not stop.wait(0.05) and (deadline is None or time.monotonic() < deadline):
        pass
    hits = launches_of(pid) - before
    print(f"FINAL 0 {time.monotonic_ns()}")
    if hits > 0:
        print(f"{hits} {names.split(',')[0]}")
    print("END", flush=True)
    time.sleep(0.01)  # detaching
    set_probes_on(None)
    return 0


def run_holder():
    write_state(0, 0, kernel="", comm="python3")
    print("HOLD", flush=True)
    sys.stdin.read()
    return 0


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 1
    role, rest = sys.argv[1], sys.argv[2:]
    if role == "daemon":
        return run_daemon(rest)
    if role == "cuda":
        return run_cuda(rest)
    if role == "sanitizer":
        return run_sanitizer(rest)
    if role == "holder":
        return run_holder()
    if role == "symhits":
        return run_symhits(rest)
    if role == "standin":
        return run_standin(rest)
    print(f"fake.py: unknown role {role}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
