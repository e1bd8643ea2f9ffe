#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where does neutracerd's per-launch cost go in PyTorch? One run on a GPU host, as root.

    investigate.py OUTDIR [--limit-s 470] [--rounds 3] [--standin LIBCUDA]

Long-lived processes serve timed loops over stdin (noop_loop.c / noop_loop.py / launch_loop.cu):
  torch   PyTorch eager loop and CNN step (tests/bench/gpu/torch_workloads.py), ctypes calls
  pyt     `import torch; torch.cuda.init(); torch.ones(1, device='cuda')` + 40 idle threads
  py      plain Python, ctypes calls
  c       plain C, calls through a function pointer, getppid()
  raw     CUDA C++ (static cudart), empty-kernel launches (built here with nvcc)
Steps, each skipped if the time limit would be passed:
  1. environment (kernel, CPU, vulnerabilities, driver, torch) -> env.txt
  2. first instruction of every symbol the daemon probes in the libcuda the workloads map
     -> entry_insns.txt (entry_insns.py)
  3. which cu* functions one eager iteration / CNN step / raw launch calls: symhits on every
     exported cu* function, only in that process -> calls.txt
  4. micro-benchmark of one uprobe hit: empty functions with different first instructions
     (libntnoop.so), probed by symhits --perf, in each process; getppid cost -> micro rows
  5. rounds of conditions around the same processes: plain, bare (symhits counting uprobes on
     the daemon's launch symbols, system-wide, the way the daemon attaches), neutracerd
     (started and stopped each round as tests/bench/gpu/run.py does) -> samples
  6. with BPF run-time stats on (progstats --enable): hits and ns per hit of every BPF program
     during the eager loop, CNN steps and raw launches, under neutracerd and under the bare
     probe -> progstats.txt
Results: OUTDIR/summary.md (tables), samples.jsonl (every raw sample), env.txt,
entry_insns.txt, calls.txt, progstats.txt, log.txt. Everything is written as it is measured,
so a run cut short still leaves what it had.
--standin runs the same steps on a machine without a GPU: the tests/standin driver instead of
libcuda, no torch (stand-in workloads of noop_loop.py), no raw program.
"""
import argparse
import json
import os
import queue
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCH_SYMBOLS = ["cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx",
                  "cuLaunchKernelEx_ptsz", "cuLaunchCooperativeKernel",
                  "cuLaunchCooperativeKernel_ptsz", "cuGraphLaunch", "cuGraphLaunch_ptsz"]
NOOPS = ["nt_noop", "nt_noop_sstep", "nt_noop_endbr", "nt_noop_nop5"]
PORT = 19561
T0 = time.monotonic()


class Cut(Exception):
    """The time limit does not leave room for this step."""


class Run:
    def __init__(self, out, limit_s):
        self.out = out
        self.deadline = T0 + limit_s
        self.tmp = os.path.join("/tmp", f"ntdiag.{os.getpid()}")
        os.makedirs(self.tmp, exist_ok=True)
        self.logf = open(os.path.join(out, "log.txt"), "a")
        self.samples = []
        self.info = {}
        self.calls = {}
        self.stats = {}
        self.children = []

    def left(self):
        return self.deadline - time.monotonic()

    def need(self, seconds, what):
        if self.left() < seconds:
            raise Cut(f"{what}: needs ~{seconds:.0f} s, {self.left():.0f} s left")

    def log(self, msg):
        line = f"[{time.monotonic() - T0:7.1f}s] {msg}"
        print(line, flush=True)
        self.logf.write(line + "\n")
        self.logf.flush()

    def write(self, name, text, mode="w"):
        with open(os.path.join(self.out, name), mode) as f:
            f.write(text)

    def sample(self, **row):
        row["t"] = round(time.monotonic() - T0, 2)
        self.samples.append(row)
        self.write("samples.jsonl", json.dumps(row) + "\n", "a")


def sh(cmd, timeout=30):
    try:
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout)
        return (r.stdout + r.stderr).strip()
    except Exception as exc:
        return f"({cmd}: {exc})"


class LineProc:
    """A child whose stdout lines arrive in a queue."""

    def __init__(self, run, name, argv, env=None, stdin=True):
        self.run, self.name = run, name
        self.errpath = os.path.join(run.tmp, f"{name}.stderr")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=open(self.errpath, "w"),
                                  text=True, bufsize=1, env=env, cwd=HERE)
        run.children.append(self)
        self.q = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def line(self, timeout):
        try:
            line = self.q.get(timeout=max(0.1, timeout))
        except queue.Empty:
            raise TimeoutError(f"{self.name}: no output in {timeout:.0f} s")
        if line is None:
            raise RuntimeError(f"{self.name} exited ({self.p.poll()}): {self.stderr_tail()}")
        return line

    def until(self, prefix, timeout, keep=None):
        end = time.monotonic() + timeout
        while True:
            line = self.line(end - time.monotonic())
            if line.startswith(prefix):
                return line
            if keep is not None:
                keep.append(line)

    def send(self, text):
        self.p.stdin.write(text + "\n")
        self.p.stdin.flush()

    def stderr_tail(self, n=1500):
        try:
            with open(self.errpath) as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM):
        if self.p.poll() is None:
            try:
                self.p.send_signal(sig)
            except OSError:
                pass


class Server(LineProc):
    """noop_loop / launch_loop protocol: READY <pid>, then RESULT lines."""

    def ready(self, timeout):
        info = []
        line = self.until("READY", timeout, keep=info)
        self.pid = int(line.split()[1])
        self.info = [l for l in info if l.startswith("INFO")]
        return self

    def ask(self, command, timeout=120):
        self.send(command)
        line = self.until("RESULT", timeout)
        parts = line.split()
        return int(parts[3]), float(parts[4])


class SymHits(LineProc):
    def __init__(self, run, name, args):
        super().__init__(run, name, [os.path.join(HERE, "symhits")] + args, stdin=False)
        self.notes = []
        self.attached = self.until("ATTACHED", 90, keep=self.notes)

    def _block(self, head, timeout=30):
        self.until(head, timeout)
        counts = {}
        while True:
            line = self.line(timeout)
            if line == "END":
                return counts
            n, name = line.split(" ", 1)
            counts[name] = int(n)

    def snapshot(self):
        self.p.send_signal(signal.SIGUSR1)
        return self._block("SNAPSHOT")

    def finish(self, timeout=120):
        """Detaches (SIGINT) and returns (final counts, seconds the detach took)."""
        t = time.monotonic()
        try:
            self.p.send_signal(signal.SIGINT)
            counts = self._block("FINAL", timeout)
            self.p.wait(timeout)
        except Exception as exc:  # never leave probes behind
            self.run.log(f"{self.name}: {exc}; killed")
            self.p.kill()
            self.p.wait(timeout)
            counts = {}
        return counts, time.monotonic() - t


class ProgStats(LineProc):
    def __init__(self, run):
        super().__init__(run, "progstats", [os.path.join(HERE, "progstats"), "--enable"])
        self.until("ENABLED", 10)
        self.raw = []

    def snap(self, label):
        self.send(f"snap {label}")
        self.until("SNAP", 20)
        progs = {}
        while True:
            line = self.line(20)
            if line == "END":
                break
            self.raw.append(f"{label}: {line}")
            pid, ptype, cnt, ns, name = line.split(" ", 4)
            progs[int(pid)] = (int(ptype), int(cnt), int(ns), name)
        return progs

    def close(self):
        self.p.stdin.close()
        self.p.wait(10)


def stats_diff(a, b):
    rows = []
    for pid, (ptype, cnt, ns, name) in b.items():
        c0, n0 = (a[pid][1], a[pid][2]) if pid in a else (0, 0)
        if cnt - c0 > 0:
            rows.append({"id": pid, "type": ptype, "name": name, "hits": cnt - c0,
                         "ns": ns - n0, "ns_per_hit": round((ns - n0) / (cnt - c0), 1)})
    return sorted(rows, key=lambda r: -r["ns"])


class Daemon:
    def __init__(self, run, binary):
        self.run = run
        env = dict(os.environ)
        lib = os.path.join(os.path.dirname(binary), "lib")
        if os.path.isdir(lib):
            env["LD_LIBRARY_PATH"] = lib + ":" + env.get("LD_LIBRARY_PATH", "")
        self.logpath = os.path.join(run.tmp, "daemon.log")
        self.t_start = time.monotonic()
        self.p = subprocess.Popen([binary, "--config", "/dev/null", "--listen",
                                   f"127.0.0.1:{PORT}", "--scan-interval", "2s"],
                                  stdout=open(self.logpath, "a"), stderr=subprocess.STDOUT,
                                  env=env)

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/metrics", timeout=5) as r:
            return r.read().decode()

    def wait_traced(self, pids, timeout=40):
        end = time.monotonic() + timeout
        last = ""
        while time.monotonic() < end:
            if self.p.poll() is not None:
                raise RuntimeError(f"neutracerd exited {self.p.returncode}")
            try:
                text = self.metrics()
                attached = sum(float(v) for v in re.findall(
                    r"^neutracer_attached_libraries(?:\{[^}]*\})? (\S+)", text, re.M))
                missing = [p for p in pids if f'pid="{p}"' not in text]
                if attached >= 1 and not missing:
                    probes = sum(float(v) for v in re.findall(
                        r"^neutracer_attached_probes(?:\{[^}]*\})? (\S+)", text, re.M))
                    return time.monotonic() - self.t_start, probes
                last = f"attached_libraries={attached} missing={missing}"
            except OSError as exc:
                last = str(exc)
            time.sleep(0.2)
        raise TimeoutError(f"neutracerd did not list {pids}: {last}")

    def stop(self, timeout=60):
        t = time.monotonic()
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait(10)
        return time.monotonic() - t


def median_spread(values):
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


# ---------------------------------------------------------------------------------------------


def step_env(run, procs, libcuda):
    lines = [f"date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}", f"uname -r: {os.uname().release}"]
    lines.append(sh("lscpu | grep -E 'Model name|^CPU\\(s\\)|Hypervisor|Virtualization|Flags'"))
    lines.append("--- /sys/devices/system/cpu/vulnerabilities")
    lines.append(sh("grep -H . /sys/devices/system/cpu/vulnerabilities/*"))
    lines.append("--- /proc/cmdline: " + sh("cat /proc/cmdline"))
    lines.append("--- nvidia-smi -L: " + sh("nvidia-smi -L"))
    lines.append("driver: " + sh("nvidia-smi --query-gpu=driver_version,name --format=csv,noheader"))
    lines.append("python: " + sys.version.replace("\n", " "))
    for name, proc in procs.items():
        for info in getattr(proc, "info", []):
            lines.append(f"{name}: {info}")
    lines.append(f"libcuda mapped by the workloads: {libcuda}")
    for name, proc in procs.items():
        try:
            with open(f"/proc/{proc.pid}/status") as f:
                st = dict(l.split(":", 1) for l in f if ":" in l)
            with open(f"/proc/{proc.pid}/maps") as f:
                vmas = sum(1 for _ in f)
            lines.append(f"process {name} pid {proc.pid}: threads {st['Threads'].strip()}, "
                         f"VmRSS {st['VmRSS'].strip()}, VmSize {st['VmSize'].strip()}, "
                         f"{vmas} mappings")
        except (OSError, KeyError, AttributeError) as exc:
            lines.append(f"process {name}: {exc}")
    lines.append("kernel.bpf_stats_enabled: " + sh("cat /proc/sys/kernel/bpf_stats_enabled"))
    lines.append("THP: " + sh("grep -H . /sys/kernel/mm/transparent_hugepage/enabled "
                              "/sys/kernel/mm/transparent_hugepage/shmem_enabled "
                              "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag"))
    lines.append("uprobe-related kernel config: " + sh(
        "(zcat /proc/config.gz 2>/dev/null || cat /boot/config-$(uname -r) 2>/dev/null) | "
        "grep -E 'UPROBE|READ_ONLY_THP|TRANSPARENT_HUGEPAGE=|PAGE_TABLE_ISOLATION|MITIGATION_' "
        "| head -40"))
    lines.append("other BPF programs loaded before the run: see progstats.txt (baseline)")
    lines.append("objdump: " + str(shutil.which("objdump")) + "   nvcc: " + str(shutil.which("nvcc")))
    run.write("env.txt", "\n".join(lines) + "\n")


def libcuda_of(pid):
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "libcuda.so" in os.path.basename(path):
                return path
    return None


def step_calls(run, proc, libcuda, phases, label):
    """symhits on every cu* function, only in proc; per-phase counts per iteration."""
    sh_ = SymHits(run, f"symhits-{label}", ["--lib", libcuda, "--prefix", "cu",
                                            "--pid", str(proc.pid), "--multi"])
    run.log(f"symhits {label}: {sh_.attached}; {len(sh_.notes)} notes "
            f"({sum(1 for n in sh_.notes if n.startswith('SKIPPED'))} skipped)")
    text = [f"## {label} (pid {proc.pid}): {sh_.attached}"] + [f"  {n}" for n in sh_.notes]
    result = {}
    try:
        before = sh_.snapshot()
        for phase, command, n in phases:
            if phase == "idle":
                time.sleep(n)
                done, seconds = n, float(n)
            else:
                done, seconds = proc.ask(command, timeout=180)
            after = sh_.snapshot()
            diff = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}
            before = after
            result[phase] = {"n": done, "seconds": seconds, "counts": diff}
            unit = "per second" if phase == "idle" else "per iteration"
            text.append(f"### {label} {phase}: {done} {'s idle' if phase == 'idle' else 'iterations'}"
                        f" ({seconds:.3f} s with every cu* function probed)")
            text.append(f"  {'calls':>10} {unit:>14}  symbol")
            for name, count in sorted(diff.items(), key=lambda kv: -kv[1]):
                text.append(f"  {count:>10} {count / max(done, 1):>14.3f}  {name}")
            total = sum(diff.values())
            text.append(f"  {total:>10} {total / max(done, 1):>14.3f}  (all cu* functions)")
    finally:
        counts, detach_s = sh_.finish()
    text.append(f"  (symhits detached in {detach_s:.2f} s)")
    run.write("calls.txt", "\n".join(text) + "\n\n", "a")
    run.calls[label] = result
    return result


def step_micro(run, servers, rounds):
    """Empty functions with and without a uprobe, in each process."""
    c = servers.get("c")
    if c:
        for r in range(3):
            n, s = c.ask("syscall 200000")
            run.sample(kind="micro", proc="c", func="getppid", probe="none", round=r, n=n,
                       seconds=s, ns=s / n * 1e9)
    for name, srv in servers.items():  # baseline: nothing probed in the library yet
        for func in ["nt_noop_twin"] + NOOPS:
            n, s = srv.ask(f"call {func} 100000")
            run.sample(kind="micro", proc=name, func=func, probe="none", round=-1, n=n,
                       seconds=s, ns=s / n * 1e9)
    lib = os.path.join(HERE, "libntnoop.so")
    probe = SymHits(run, "symhits-noop", ["--lib", lib, "--sym", ",".join(NOOPS), "--perf"])
    run.log(f"micro: {probe.attached} {probe.notes}")
    try:
        for r in range(rounds):
            run.need(25, "micro round")
            for name, srv in servers.items():
                for func in ["nt_noop_twin"] + NOOPS:
                    count = 200000 if func == "nt_noop_twin" else 20000
                    n, s = srv.ask(f"call {func} {count}")
                    run.sample(kind="micro", proc=name, func=func,
                               probe="none" if func == "nt_noop_twin" else "uprobe",
                               round=r, n=n, seconds=s, ns=s / n * 1e9)
                if name == "c":  # the trap followed by branchy user code (nt_work)
                    for func in ("nt_noop_twin", "nt_noop", "nt_noop_sstep"):
                        n, s = srv.ask(f"pair {func} 20000")
                        run.sample(kind="pair", proc=name, func=func, round=r, n=n,
                                   seconds=s, ns=s / n * 1e9)
        # The BPF program's own share, with run-time stats on (separate, untimed pass).
        ps = ProgStats(run)
        try:
            for name, srv in servers.items():
                a = ps.snap(f"micro-{name}-before")
                srv.ask("call nt_noop 20000")
                b = ps.snap(f"micro-{name}-after")
                run.stats[f"micro {name} nt_noop x20000"] = stats_diff(a, b)
        finally:
            ps.close()
            run.write("progstats.txt", "\n".join(ps.raw) + "\n", "a")
    finally:
        counts, detach_s = probe.finish()
        run.log(f"micro: probe hits {counts}, detached in {detach_s:.2f} s")


def measure(run, servers, cond, r, sizes):
    for name, command, kind in (("torch", f"eager {sizes['eager']}", "eager"),
                                ("torch", f"cnn {sizes['cnn']}", "cnn"),
                                ("raw", f"launch {sizes['launch']}", "launch")):
        srv = servers.get(name)
        if not srv:
            continue
        n, s = srv.ask(command, timeout=240)
        scale = {"eager": 1e6, "cnn": 1e3, "launch": 1e9}[kind]
        unit = {"eager": "us/iter", "cnn": "ms/step", "launch": "ns/launch"}[kind]
        run.sample(kind="timing", workload=kind, cond=cond, round=r, n=n, seconds=s,
                   value=s / n * scale, unit=unit)
        run.log(f"  {cond:7} r{r} {kind:6} {s / n * scale:10.3f} {unit}")


def stats_pass(run, servers, cond, sizes):
    ps = ProgStats(run)
    try:
        snap = ps.snap(f"{cond}-start")
        for name, command, kind in (("torch", f"eager {sizes['eager']}", "eager"),
                                    ("torch", f"cnn {sizes['cnn']}", "cnn"),
                                    ("raw", f"launch {sizes['launch']}", "launch")):
            srv = servers.get(name)
            if not srv:
                continue
            n, s = srv.ask(command, timeout=240)
            after = ps.snap(f"{cond}-after-{kind}")
            run.stats[f"{cond} {kind} x{n}"] = stats_diff(snap, after)
            run.sample(kind="timing-stats-on", workload=kind, cond=cond, round=0, n=n,
                       seconds=s)
            snap = after
    finally:
        ps.close()
        run.write("progstats.txt", "\n".join(ps.raw) + "\n", "a")


def step_rounds(run, servers, libcuda, daemon_bin, rounds, sizes):
    conds = ["plain", "bare", "neutracerd"]
    round_s = 45.0
    for r in range(rounds):
        run.need(round_s * 1.1 + 20, f"round {r}")
        t_round = time.monotonic()
        order = conds[r % 3:] + conds[:r % 3]
        last = r == 0  # the stats pass runs in the first round: a cut run still has it
        for cond in order:
            try:
                run_condition(run, servers, libcuda, daemon_bin, cond, r, last, sizes)
            except Cut:
                raise
            except Exception as exc:
                run.log(f"  FAILED {cond} r{r}: {type(exc).__name__}: {exc}")
        round_s = time.monotonic() - t_round
        run.log(f"round {r} took {round_s:.0f} s")


def run_condition(run, servers, libcuda, daemon_bin, cond, r, last, sizes):
    """One condition around the same processes: plain, bare probes, or neutracerd. The last
    round also runs the stats pass (untimed for the tables) under bare and neutracerd."""
    bare_syms = ",".join(LAUNCH_SYMBOLS)
    if cond == "plain":
        measure(run, servers, cond, r, sizes)
    elif cond == "bare":
        probe = SymHits(run, f"symhits-bare{r}", ["--lib", libcuda, "--sym", bare_syms,
                                                  "--perf"])
        try:
            measure(run, servers, cond, r, sizes)
            if last:
                stats_pass(run, servers, "bare", sizes)
        finally:
            counts, detach_s = probe.finish()
            run.log(f"  bare r{r}: {probe.attached}, hits {counts}, "
                    f"detached in {detach_s:.2f} s")
    else:
        d = Daemon(run, daemon_bin)
        try:
            pids = [s.pid for k, s in servers.items() if k in ("torch", "raw")]
            ready_s, probes = d.wait_traced(pids)
            time.sleep(0.5)
            run.log(f"  neutracerd r{r}: tracing after {ready_s:.1f} s, {probes:g} probes")
            measure(run, servers, cond, r, sizes)
            if last:
                stats_pass(run, servers, "neutracerd", sizes)
                time.sleep(2.2)  # one scan, then the daemon's own count
                text = d.metrics()
                keep = [l for l in text.splitlines()
                        if l.startswith(("neutracer_cuda_kernel_launches_total",
                                         "neutracer_attached", "neutracer_probe",
                                         "neutracer_events_dropped",
                                         "neutracer_bpf_map"))]
                run.write("progstats.txt", "\n## neutracerd /metrics (excerpt)\n" +
                          "\n".join(keep[:80]) + "\n", "a")
        finally:
            stop_s = d.stop()
            run.log(f"  neutracerd r{r}: stopped in {stop_s:.1f} s")
            run.sample(kind="daemon", round=r, stop_s=stop_s)


def smaps_of(pid, path):
    """smaps fields of the executable mapping(s) of path in pid (FilePmdMapped: huge pages)."""
    fields, inside = {}, False
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                parts = line.split()
                if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                    inside = len(parts) >= 6 and parts[-1] == path and "x" in parts[1]
                    if inside:
                        fields.setdefault("mappings", []).append(" ".join(parts[:2]))
                elif inside and line.rstrip().endswith("kB") and len(parts) == 3:
                    key = parts[0].rstrip(":")
                    fields[key] = fields.get(key, 0) + int(parts[1])
    except OSError as exc:
        fields["error"] = str(exc)
    return fields


def step_followup(run, servers, libcuda, rounds, extra_sym, unhit_sym="cuGraphLaunch"):
    """Is a trap dearer at the launch site, or anywhere inside the PyTorch loop?

    nt_noop stays probed (symhits --perf, system-wide) throughout; each round alternates, in
    the same processes: the eager loop alone (plain, twice), with 2 ctypes calls of nt_noop or
    of its unprobed twin per iteration (eagerx), under a bare probe on cuLaunchKernel (perf,
    system-wide, as the daemon attaches), and under a bare probe on EXTRA_SYM (a libcuda
    function PyTorch calls many times per iteration, pid-filtered); the raw CUDA loop plain,
    under the cuLaunchKernel probe, and with nt_noop / twin before each launch (launchx); plain
    Python work + call (pyworkx); the C pair and tight loops; and a probe on UNHIT_SYM, a
    libcuda function the eager loop never calls (does a breakpoint cost by being there, e.g. by
    splitting a huge-page mapping of libcuda's text?). smaps of libcuda's text in the PyTorch
    process are recorded with and without a probe."""
    noop = SymHits(run, "symhits-noop-f", ["--lib", os.path.join(HERE, "libntnoop.so"),
                                             "--sym", "nt_noop", "--perf"])
    torch, raw, py, c = (servers.get(k) for k in ("torch", "raw", "py", "c"))
    E, L = 5000, 50000

    def rec(proc, what, cond, r, answer, per_iter_scale=1e9):
        n, sec = answer
        run.sample(kind="follow", proc=proc, what=what, cond=cond, round=r, n=n, seconds=sec,
                   ns=sec / n * per_iter_scale)

    if torch:
        run.sample(kind="smaps", when="start (nt_noop probed only)",
                   fields=smaps_of(torch.pid, libcuda))
    try:
        for r in range(rounds):
            run.need(25, f"follow-up round {r}")
            pair = ["nt_noop_twin", "nt_noop"] if r % 2 == 0 else ["nt_noop", "nt_noop_twin"]
            if torch:
                rec("torch", "eager", "plain", r, torch.ask(f"eager {E}"))
                for k in (1, 2, 8):
                    for f in pair:
                        rec("torch", f"eagerx{k} {f}", "plain", r,
                            torch.ask(f"eagerx {f} {k} {E}"))
                for f in pair:
                    rec("torch", f"call {f}", "plain", r, torch.ask(f"call {f} 20000"))
            if raw:
                rec("raw", "launch", "plain", r, raw.ask(f"launch {L}"))
                for f in pair:
                    rec("raw", f"launchx {f}", "plain", r, raw.ask(f"launchx {f} {L}"))
            if py:
                for f in pair:
                    rec("py", f"pyworkx {f}", "plain", r, py.ask(f"pyworkx {f} 20000"))
                    rec("py", f"call {f}", "plain", r, py.ask(f"call {f} 20000"))
            if c:
                for f in pair:
                    rec("c", f"pair {f}", "plain", r, c.ask(f"pair {f} 20000"))
                    rec("c", f"call {f}", "plain", r, c.ask(f"call {f} 20000"))
            try:
                bare = SymHits(run, f"symhits-bl{r}", ["--lib", libcuda, "--sym",
                                                        "cuLaunchKernel", "--perf"])
                try:
                    if torch:
                        rec("torch", "eager", "bare-launch", r, torch.ask(f"eager {E}"))
                        rec("torch", "eagerx2 nt_noop_twin", "bare-launch", r,
                            torch.ask(f"eagerx nt_noop_twin 2 {E}"))
                    if raw:
                        rec("raw", "launch", "bare-launch", r, raw.ask(f"launch {L}"))
                    if torch and r == 0:
                        run.sample(kind="smaps", when="cuLaunchKernel probed",
                                   fields=smaps_of(torch.pid, libcuda))
                finally:
                    counts, _ = bare.finish()
                    run.sample(kind="follow-hits", cond="bare-launch", round=r, counts=counts)
            except Cut:
                raise
            except Exception as exc:
                run.log(f"  bare-launch r{r} FAILED: {type(exc).__name__}: {exc}")
            if torch:  # the same probe through a pid-filtered uprobe_multi link
                try:
                    probe = SymHits(run, f"symhits-bm{r}", ["--lib", libcuda, "--sym",
                                                             "cuLaunchKernel", "--pid",
                                                             str(torch.pid), "--multi"])
                    try:
                        rec("torch", "eager", "bare-launch-multi", r, torch.ask(f"eager {E}"))
                    finally:
                        probe.finish()
                except Cut:
                    raise
                except Exception as exc:
                    run.log(f"  bare-launch-multi r{r} FAILED: {type(exc).__name__}: {exc}")
            if torch and extra_sym:
                try:
                    probe = SymHits(run, f"symhits-x{r}", ["--lib", libcuda, "--sym", extra_sym,
                                                            "--pid", str(torch.pid), "--multi"])
                    try:
                        rec("torch", "eager", f"bare-{extra_sym}", r, torch.ask(f"eager {E}"))
                    finally:
                        counts, _ = probe.finish()
                        run.sample(kind="follow-hits", cond=f"bare-{extra_sym}", round=r,
                                   counts=counts, iterations=E)
                except Cut:
                    raise
                except Exception as exc:
                    run.log(f"  bare-{extra_sym} r{r} FAILED: {type(exc).__name__}: {exc}")
            if torch and unhit_sym:
                try:
                    probe = SymHits(run, f"symhits-u{r}", ["--lib", libcuda, "--sym", unhit_sym,
                                                            "--pid", str(torch.pid), "--multi"])
                    try:
                        rec("torch", "eager", "probe-never-hit", r, torch.ask(f"eager {E}"))
                    finally:
                        counts, _ = probe.finish()
                        run.sample(kind="follow-hits", cond=f"unhit-{unhit_sym}", round=r,
                                   counts=counts)
                except Cut:
                    raise
                except Exception as exc:
                    run.log(f"  unhit r{r} FAILED: {type(exc).__name__}: {exc}")
            if torch:
                rec("torch", "eager", "plain", r, torch.ask(f"eager {E}"))
                if r == 0:
                    run.sample(kind="smaps", when="after detaching (nt_noop probed only)",
                               fields=smaps_of(torch.pid, libcuda))
            run.log(f"follow-up round {r} done")
    finally:
        counts, _ = noop.finish()
        run.log(f"follow-up: nt_noop hits {counts}")


def summarize_followup(run):
    rows = [s for s in run.samples if s.get("kind") == "follow"]
    if not rows:
        return []
    rounds = sorted({s["round"] for s in rows})

    def val(proc, what, cond, r):
        v = [s["ns"] for s in rows if s["proc"] == proc and s["what"] == what and
             s["cond"] == cond and s["round"] == r]
        return statistics.mean(v) if v else None

    extra = sorted({s["cond"] for s in rows if s["cond"].startswith("bare-cu")
                    and s["cond"] != "bare-launch"})
    per_call = {}
    for h in run.samples:
        if h.get("kind") == "follow-hits" and h.get("iterations") and h["counts"]:
            per_call.setdefault(h["cond"], []).append(sum(h["counts"].values()) / h["iterations"])
    out = ["", "## Follow-up: the cost of one trap, by where it is taken (paired per round)", "",
           "Each round: the same processes, conditions back to back; a difference is taken "
           "within a round, then the median (min-max) over rounds is shown. nt_noop is probed "
           "throughout (system-wide); nt_noop_twin never is.", "",
           "| what | how | ns per trap, median | min-max | rounds |", "|---|---|---|---|---|"]

    def line(label, how, diffs):
        diffs = [d for d in diffs if d is not None]
        if diffs:
            ms = median_spread(diffs)
            out.append(f"| {label} | {how} | {ms[0]:.0f} | {ms[1]:.0f} to {ms[2]:.0f} | "
                       f"{len(diffs)} |")

    def d(a, b, k=1.0):
        return None if a is None or b is None else (a - b) / k

    line("cuLaunchKernel, PyTorch eager loop", "(eager bare-launch - eager plain) / 2 launches",
         [d(val("torch", "eager", "bare-launch", r), val("torch", "eager", "plain", r), 2)
          for r in rounds])
    line("cuLaunchKernel via a pid-filtered uprobe_multi link, PyTorch eager loop",
         "(eager bare-launch-multi - eager plain) / 2",
         [d(val("torch", "eager", "bare-launch-multi", r), val("torch", "eager", "plain", r), 2)
          for r in rounds])
    for k in (1, 2, 8):
        line(f"nt_noop, inside the PyTorch eager loop, {k} per iteration",
             f"(eagerx{k} nt_noop - eagerx{k} twin) / {k}",
             [d(val("torch", f"eagerx{k} nt_noop", "plain", r),
                val("torch", f"eagerx{k} nt_noop_twin", "plain", r), k) for r in rounds])
    line("cuLaunchKernel, PyTorch loop with 2 twin calls", "(eagerx2 twin bare - eagerx2 twin) / 2",
         [d(val("torch", "eagerx2 nt_noop_twin", "bare-launch", r),
            val("torch", "eagerx2 nt_noop_twin", "plain", r), 2) for r in rounds])
    for cond in extra:
        k = statistics.median(per_call.get(cond, [0])) or None
        if k:
            line(f"{cond[5:]}, PyTorch eager loop ({k:.1f} calls/iter)",
                 f"(eager {cond} - eager plain) / {k:.1f}",
                 [d(val("torch", "eager", cond, r), val("torch", "eager", "plain", r), k)
                  for r in rounds])
    line("a probe on a libcuda function never called (no trap)",
         "(eager probe-never-hit - eager plain), per iteration / 2",
         [d(val("torch", "eager", "probe-never-hit", r), val("torch", "eager", "plain", r), 2)
          for r in rounds])
    line("nt_noop, tight ctypes loop in the PyTorch process", "call nt_noop - call twin",
         [d(val("torch", "call nt_noop", "plain", r), val("torch", "call nt_noop_twin", "plain", r))
          for r in rounds])
    line("cuLaunchKernel, raw CUDA C++ loop", "launch bare-launch - launch plain",
         [d(val("raw", "launch", "bare-launch", r), val("raw", "launch", "plain", r))
          for r in rounds])
    line("nt_noop before each launch, raw CUDA C++ loop", "launchx nt_noop - launchx twin",
         [d(val("raw", "launchx nt_noop", "plain", r), val("raw", "launchx nt_noop_twin", "plain", r))
          for r in rounds])
    line("nt_noop after ~6 us of Python work (plain Python)", "pyworkx nt_noop - pyworkx twin",
         [d(val("py", "pyworkx nt_noop", "plain", r), val("py", "pyworkx nt_noop_twin", "plain", r))
          for r in rounds])
    line("nt_noop, tight ctypes loop (plain Python)", "call nt_noop - call twin",
         [d(val("py", "call nt_noop", "plain", r), val("py", "call nt_noop_twin", "plain", r))
          for r in rounds])
    line("nt_noop before nt_work (C)", "pair nt_noop - pair twin",
         [d(val("c", "pair nt_noop", "plain", r), val("c", "pair nt_noop_twin", "plain", r))
          for r in rounds])
    line("nt_noop, tight C loop", "call nt_noop - call twin",
         [d(val("c", "call nt_noop", "plain", r), val("c", "call nt_noop_twin", "plain", r))
          for r in rounds])
    for sm in (x for x in run.samples if x.get("kind") == "smaps"):
        f = sm["fields"]
        out.append(f"- libcuda text in the PyTorch process, {sm['when']}: " + ", ".join(
            f"{k} {f[k]}" for k in ("Rss", "Private_Dirty", "Anonymous", "FilePmdMapped",
                                     "AnonHugePages", "mappings", "error") if k in f))
    out += ["", "Per-iteration times behind them (ns per iteration or call, median (min-max) "
            "over rounds):", "", "| process | loop | condition | median | min-max |",
            "|---|---|---|---|---|"]
    keys = []
    for s in rows:
        k = (s["proc"], s["what"], s["cond"])
        if k not in keys:
            keys.append(k)
    for k in keys:
        ms = median_spread([s["ns"] for s in rows if (s["proc"], s["what"], s["cond"]) == k])
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {ms[0]:.0f} | {ms[1]:.0f}-{ms[2]:.0f} |")
    return out


# ---------------------------------------------------------------------------------------------


def summarize(run):
    out = ["# neutracerd launch cost: where it goes", ""]
    env_path = os.path.join(run.out, "env.txt")
    if os.path.exists(env_path):
        with open(env_path) as f:
            env = f.read()
        for key in ("uname -r", "Model name", "driver", "torch="):
            for line in env.splitlines():
                if key in line:
                    out.append(f"- {line.strip()}")
                    break
    out.append(f"- elapsed {time.monotonic() - T0:.0f} s")
    launches = {}
    for label, workload in (("torch", "eager"), ("torch", "cnn"), ("raw", "launch")):
        res = run.calls.get(label, {}).get(workload)
        if res:
            n = sum(v for k, v in res["counts"].items()
                    if any(s in LAUNCH_SYMBOLS for s in k.split("=")))
            launches[workload] = n / max(res["n"], 1)
    out.append("")
    out.append("## Timings (median (min-max) over rounds; same processes throughout)")
    out.append("")
    out.append("| workload | condition | rounds | median | min-max | added vs plain | "
               "launches/iter | added per launch |")
    out.append("|---|---|---|---|---|---|---|---|")
    for workload in ("eager", "cnn", "launch"):
        rows = [s for s in run.samples if s.get("kind") == "timing" and s["workload"] == workload]
        if not rows:
            continue
        unit = rows[0]["unit"]
        plain = median_spread([s["value"] for s in rows if s["cond"] == "plain"])
        for cond in ("plain", "bare", "neutracerd"):
            ms = median_spread([s["value"] for s in rows if s["cond"] == cond])
            if not ms:
                continue
            k = len([s for s in rows if s["cond"] == cond])
            added = per = ""
            per_launch = launches.get(workload, 1.0 if workload == "launch" else None)
            if plain and cond != "plain":
                d = ms[0] - plain[0]
                added = f"{d:+.3f} {unit.split('/')[0]}"
                if per_launch:
                    to_ns = {"us": 1e3, "ms": 1e6, "ns": 1.0}[unit.split("/")[0]]
                    per = f"{d * to_ns / per_launch:+.0f} ns"
            lpi = f"{per_launch:.2f}" if per_launch else "?"
            out.append(f"| {workload} | {cond} | {k} | {ms[0]:.3f} {unit} | {ms[1]:.3f}-{ms[2]:.3f} "
                       f"| {added} | {lpi} | {per} |")
    out.append("")
    out.append("## Micro-benchmark: one call of an empty function (ns/call, median (min-max) "
               "over rounds)")
    out.append("")
    micro = [s for s in run.samples if s.get("kind") == "micro"]
    procs = []
    for s in micro:
        if s["proc"] not in procs:
            procs.append(s["proc"])
    funcs = ["nt_noop_twin"] + NOOPS
    out.append("| process | " + " | ".join(funcs) + " |")
    out.append("|---|" + "---|" * len(funcs))
    for proc in procs:
        cells = []
        twin = median_spread([s["ns"] for s in micro if s["proc"] == proc and
                              s["func"] == "nt_noop_twin" and s["round"] >= 0])
        for func in funcs:
            ms = median_spread([s["ns"] for s in micro if s["proc"] == proc and
                                s["func"] == func and s["round"] >= 0])
            if not ms:
                cells.append("")
                continue
            extra = f" (+{ms[0] - twin[0]:.0f})" if twin and func != "nt_noop_twin" else ""
            cells.append(f"{ms[0]:.0f} ({ms[1]:.0f}-{ms[2]:.0f}){extra}")
        out.append(f"| {proc} | " + " | ".join(cells) + " |")
    pairs = [s for s in run.samples if s.get("kind") == "pair"]
    if pairs:
        twin = median_spread([s["ns"] for s in pairs if s["func"] == "nt_noop_twin"])
        out.append("")
        out.append("C loop, each call followed by nt_work (~256 indirect calls over 16 pages, "
                   "never probed): ns per (call + nt_work), median (min-max)")
        out.append("")
        out.append("| first call | ns per pair | minus twin pair |")
        out.append("|---|---|---|")
        for func in ("nt_noop_twin", "nt_noop", "nt_noop_sstep"):
            ms = median_spread([s["ns"] for s in pairs if s["func"] == func])
            if ms:
                out.append(f"| {func} | {ms[0]:.0f} ({ms[1]:.0f}-{ms[2]:.0f}) | "
                           f"{ms[0] - twin[0]:+.0f} |")
    sys_ = median_spread([s["ns"] for s in micro if s["func"] == "getppid"])
    if sys_:
        out.append("")
        out.append(f"getppid() system call in C: {sys_[0]:.0f} ns (min {sys_[1]:.0f}, max "
                   f"{sys_[2]:.0f}), 3 x 200000 calls")
    base = [s for s in micro if s["round"] == -1]
    if base:
        out.append("")
        out.append("Before any probe was attached (1 x 100000 calls, ns/call): " + "; ".join(
            f"{s['proc']} {s['func']} {s['ns']:.1f}" for s in base))
    out.append("")
    out.append("## BPF programs (run-time stats on; hits and ns per hit inside the program)")
    out.append("")
    for label, rows in run.stats.items():
        out.append(f"### {label}")
        for row in rows[:12]:
            out.append(f"- {row['name']} (id {row['id']}, type {row['type']}): {row['hits']} hits, "
                       f"{row['ns_per_hit']} ns/hit, {row['ns'] / 1e6:.3f} ms total")
        out.append("")
    out.append("## Driver calls per iteration (symhits on every cu* function, pid-filtered)")
    out.append("")
    try:
        with open(os.path.join(HERE, "daemon_symbols.txt")) as f:
            probed = {ln.strip() for ln in f if ln.strip()}
    except OSError:
        probed = set()
    for label, phases in run.calls.items():
        for phase, res in phases.items():
            mine = {k: v for k, v in res["counts"].items() if probed & set(k.split("="))}
            out.append(f"- {label} {phase}: calls of functions neutracerd probes, per "
                       f"{'s' if phase == 'idle' else 'iteration'}: " + (", ".join(
                           f"{k} {v / max(res['n'], 1):.2f}" for k, v in
                           sorted(mine.items(), key=lambda kv: -kv[1])) or "none"))
            top = sorted(res["counts"].items(), key=lambda kv: -kv[1])[:10]
            per = "per s" if phase == "idle" else "per iter"
            out.append(f"- {label} {phase} (n={res['n']}): " + ", ".join(
                f"{k} {v / max(res['n'], 1):.2f}" for k, v in top) + f" [{per}]")
    out += summarize_followup(run)
    run.write("summary.md", "\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--limit-s", type=float, default=470)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--micro-rounds", type=int, default=5)
    ap.add_argument("--standin", help="stand-in libcuda.so.1 (no GPU): test the orchestration")
    ap.add_argument("--daemon", default=os.path.join(HERE, "neutracerd"))
    ap.add_argument("--sizes", default="eager=20000,cnn=100,launch=200000")
    ap.add_argument("--plan", choices=["full", "followup"], default="full",
                    help="followup: only the paired trap-cost rounds (step_followup)")
    ap.add_argument("--extra-sym", default="cuCtxGetDevice_v2",
                    help="followup: a libcuda function PyTorch calls often, probed alone")
    ap.add_argument("--raw-binary", help="a prebuilt launch_loop instead of building one")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    run = Run(args.out, args.limit_s)
    sizes = {k: int(v) for k, v in (kv.split("=") for kv in args.sizes.split(","))}
    noop = os.path.join(HERE, "libntnoop.so")
    py = sys.executable
    servers = {}
    try:
        # Start everything that takes long first: nvcc, torch imports.
        nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                        if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
        build = None
        if args.raw_binary:
            build = subprocess.Popen(["cp", args.raw_binary, os.path.join(run.tmp, "launch_loop")])
        elif nvcc and not args.standin:
            exe = os.path.join(run.tmp, "launch_loop")
            build = subprocess.Popen(
                f"{nvcc} -O2 -cudart static -arch=native -o {exe} launch_loop.cu || "
                f"{nvcc} -O2 -cudart static -arch=sm_90 -o {exe} launch_loop.cu",
                shell=True, cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if args.standin:
            torch_args = ["--standin-lib", args.standin, "--workloads", "eager,cnn"]
            pyt_args = ["--standin-lib", args.standin, "--idle-threads", "40"]
        else:
            torch_args = ["--torch", "--workloads", "eager,cnn"]
            pyt_args = ["--torch", "--idle-threads", "40"]
        pending = {
            "torch": Server(run, "torch", [py, "noop_loop.py", "--noop-lib", noop] + torch_args),
            "pyt": None if args.plan == "followup" else
                   Server(run, "pyt", [py, "noop_loop.py", "--noop-lib", noop] + pyt_args),
            "py": Server(run, "py", [py, "noop_loop.py", "--noop-lib", noop]),
            "c": Server(run, "c", [os.path.join(HERE, "noop_loop"), noop]),
        }
        for name, srv in pending.items():
            if srv is None:
                continue
            try:
                servers[name] = srv.ready(max(10, min(180, run.left() - 60)))
                run.log(f"{name}: ready, pid {srv.pid} {' '.join(srv.info)}")
            except Exception as exc:
                run.log(f"{name}: FAILED to start: {exc} {srv.stderr_tail()}")
        if build:
            try:
                text = build.communicate(timeout=max(10, min(180, run.left() - 60)))[0]
                if build.returncode == 0:
                    servers["raw"] = Server(run, "raw", [os.path.join(run.tmp, "launch_loop"),
                                                         noop]).ready(60)
                    run.log(f"raw: ready, pid {servers['raw'].pid}")
                else:
                    run.log(f"raw: nvcc failed: {text[-1500:]}")
            except Exception as exc:
                run.log(f"raw: FAILED: {exc}")
        else:
            run.log("raw: skipped (no nvcc or --standin)")

        anchor = servers.get("torch") or servers.get("pyt")
        libcuda = args.standin or (libcuda_of(anchor.pid) if anchor else None)
        if libcuda:
            libcuda = os.path.realpath(libcuda)
        step_env(run, servers, libcuda)
        run.log(f"libcuda: {libcuda}")
        if libcuda and args.plan == "full":
            ins = subprocess.run([py, "entry_insns.py", libcuda, "--symbols-file",
                                  "daemon_symbols.txt"], capture_output=True, text=True,
                                 cwd=HERE, timeout=120)
            run.write("entry_insns.txt", ins.stdout + ins.stderr)
        if args.plan == "full":
            ps = ProgStats(run)
            ps.snap("baseline")
            ps.close()
            run.write("progstats.txt", "## baseline (programs loaded before the run)\n" +
                      "\n".join(ps.raw) + "\n", "a")

        steps = [
            ("calls torch", 40, lambda: step_calls(
                run, servers["torch"], libcuda,
                [("eager", "eager 2000", 2000), ("cnn", "cnn 20", 20), ("idle", None, 1)],
                "torch")),
            ("calls raw", 20, lambda: step_calls(
                run, servers["raw"], libcuda, [("launch", "launch 20000", 20000)], "raw")),
            ("micro", 60, lambda: step_micro(
                run, {k: servers[k] for k in ("c", "py", "pyt", "torch") if k in servers},
                args.micro_rounds)),
            ("rounds", 60, lambda: step_rounds(run, servers, libcuda, args.daemon,
                                               args.rounds, sizes)),
        ]
        if args.plan == "followup":
            steps = [("followup", 30, lambda: step_followup(run, servers, libcuda, args.rounds,
                                                            args.extra_sym))]
        if not libcuda or not ({"torch", "raw"} & set(servers)):
            steps = [s for s in steps if s[0] == "micro"]
            run.log("no CUDA workload or no libcuda: only the micro-benchmark runs")
        for name, need_s, fn in steps:
            if name.startswith("calls raw") and "raw" not in servers:
                continue
            if name.startswith("calls torch") and "torch" not in servers:
                continue
            try:
                run.need(need_s, name)
                run.log(f"== {name}")
                fn()
            except Cut as exc:
                run.log(f"CUT {exc}")
            except Exception as exc:
                run.log(f"FAILED {name}: {type(exc).__name__}: {exc}")
            summarize(run)
        # The hit symbols' first instructions too (they may be other entry points).
        hit = set()
        for phases in run.calls.values():
            for res in phases.values():
                for k in res["counts"]:
                    hit.update(k.split("="))
        if libcuda and hit:
            ins = subprocess.run([py, "entry_insns.py", libcuda] + sorted(hit), capture_output=True,
                                 text=True, cwd=HERE, timeout=120)
            run.write("entry_insns.txt", "\n## symbols hit by the workloads\n" + ins.stdout +
                      ins.stderr, "a")
    finally:
        for child in run.children:
            if isinstance(child, Server):
                try:
                    child.send("quit")
                except OSError:
                    pass
            else:
                child.stop(signal.SIGINT)
        time.sleep(0.5)
        tails = []
        for child in run.children:
            child.stop(signal.SIGKILL)
            tail = child.stderr_tail(3000)
            if tail.strip():
                tails.append(f"--- {child.name} stderr (tail)\n{tail}")
        dlog = os.path.join(run.tmp, "daemon.log")
        if os.path.exists(dlog):
            with open(dlog) as f:
                text = f.read()
            tails.append("--- neutracerd log (head and tail)\n" + text[:3000] + "\n...\n" +
                         text[-4000:])
        run.write("log.txt", "\n".join(tails) + "\n", "a")
        summarize(run)
        run.log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
