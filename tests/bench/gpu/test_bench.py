#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Self-tests of the GPU benchmark runner without a GPU, root or the daemon:

    python3 tests/bench/gpu/test_bench.py        (about 1 minute)

Unit tests of run.py's helpers (statistics, formatting, compute-sanitizer verdicts, nvcc
fallback, report rendering, exit status) and end-to-end dry runs (run.py --dry-run, with the
stand-ins of fake.py): a clean run, a miscounting daemon, a failing workload, a budget cut, a
busy port, and SIGTERM in the middle of a daemon session. paired.py: chunk classification,
pairing and the confidence interval on synthetic data with a known ratio, and --fake runs
(alone, over its budget, and through run.py --method paired); count_error.py --fake.
"""
import json
import math
import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as bench  # noqa: E402
import paired  # noqa: E402
import stacks_cost  # noqa: E402

RUN = os.path.join(HERE, "run.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dry_run(outdir, *extra, env=None, timeout=240):
    cmd = [sys.executable, RUN, "/nonexistent/neutracerd", outdir, "--dry-run",
           "--port", str(free_port())] + list(extra)
    res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=timeout, env=dict(os.environ, **(env or {})))
    data = None
    path = os.path.join(outdir, "bench.json")
    if os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    return res.returncode, res.stdout, data


def fake_daemons():
    return bench.other_daemons(b"fake.py\0daemon")


class Helpers(unittest.TestCase):
    def test_stats_and_format(self):
        st = bench.stats([3.0, 1.0, 2.0, None])
        self.assertEqual((st["median"], st["min"], st["max"], st["n"]), (2.0, 1.0, 3.0, 3))
        self.assertIsNone(bench.stats([]))
        self.assertEqual(bench.fmt_cell(st), "2.000 (1.000–3.000)")
        self.assertEqual(bench.fmt_cell(bench.stats([2345.4])), "2345")
        self.assertEqual(bench.fmt_cell(None), "n/a")
        self.assertEqual(bench.fmt(12.345), "12.35")
        self.assertEqual(bench.fmt(123.45), "123.5")
        self.assertAlmostEqual(bench.ratio(bench.stats([3.0]), bench.stats([2.0])), 1.5)
        self.assertIsNone(bench.ratio(None, bench.stats([2.0])))
        self.assertEqual(bench.fmt_ratio(None), "n/a")

    def test_summarize_uses_ok_samples_only(self):
        samples = [
            {"workload": "raw", "condition": "plain", "ok": True, "value": 2000.0},
            {"workload": "raw", "condition": "plain", "ok": True, "value": 2200.0},
            {"workload": "raw", "condition": "plain", "ok": False, "value": None},
            {"workload": "raw", "condition": "neutracerd", "ok": True, "value": 2600.0},
        ]
        s = bench.summarize(samples, ["raw"])["raw"]
        self.assertEqual(s["plain"]["median"], 2100.0)
        self.assertEqual(s["plain"]["n"], 2)
        self.assertAlmostEqual(s["ratio_neutracerd"], 2600.0 / 2100.0)
        self.assertIsNone(s["profiler"])
        self.assertIsNone(s["ratio_profiler"])

    def test_prometheus_helpers(self):
        text = ('neutracer_cuda_kernel_launches_total{pid="7",comm="a",kernel="k1"} 10\n'
                'neutracer_cuda_kernel_launches_total{pid="7",comm="a",kernel="[unresolved]"} 2\n'
                'neutracer_cuda_kernel_launches_total{pid="8",comm="b",kernel="k1"} 5\n'
                'neutracer_scans_total 4\n')
        samples = bench.parse_prometheus(text)
        self.assertEqual(bench.launches_by_kernel(samples, 7), {"k1": 10, "[unresolved]": 2})
        self.assertTrue(bench.pid_listed(samples, 8))
        self.assertFalse(bench.pid_listed(samples, 9))
        self.assertEqual(bench.prom_sum(samples, "neutracer_scans_total"), 4)
        self.assertEqual(bench.prom_sum(samples, bench.LAUNCHES, pid=7), 12)

    def test_sanitizer_verdict(self):
        out = ("========= COMPUTE-SANITIZER\n"
               "========= Leaked 4194304 bytes at 0x7f5a9e000000\n"
               "=========     Saved host backtrace up to driver entry point at cudaMalloc time\n"
               "========= Leaked 4194304 bytes at 0x7f5a9e400000\n"
               "========= LEAK SUMMARY: 8388608 bytes leaked in 2 allocations\n"
               "========= ERROR SUMMARY: 2 errors\n")
        reported, evidence = bench.sanitizer_verdict(out)
        self.assertTrue(reported)
        self.assertIn("8388608 bytes leaked in 2 allocations", evidence)
        reported, evidence = bench.sanitizer_verdict("========= ERROR SUMMARY: 0 errors\n")
        self.assertFalse(reported)
        self.assertIn("0 errors", evidence)
        self.assertTrue(bench.sanitizer_verdict("2 allocations leaked\n")[0])

    def test_build_falls_back_to_sm90(self):
        with tempfile.TemporaryDirectory() as d:
            nvcc = os.path.join(d, "nvcc")
            with open(nvcc, "w") as f:
                f.write('#!/bin/sh\nfor a in "$@"; do [ "$a" = -arch=native ] && '
                        '{ echo "no GPU for native" >&2; exit 1; }; done\n'
                        'while [ $# -gt 0 ]; do [ "$1" = -o ] && { touch "$2"; exit 0; }; '
                        'shift; done\nexit 3\n')
            os.chmod(nvcc, os.stat(nvcc).st_mode | stat.S_IEXEC)
            out = os.path.join(d, "prog")
            ok, attempts = bench.build_cuda(nvcc, "x.cu", out, [None, "-arch=native", "-arch=sm_90"])
            self.assertTrue(ok)
            self.assertEqual([a["cmd"][4] for a in attempts], ["-arch=native", "-arch=sm_90"])
            self.assertFalse(attempts[0]["ok"])
            self.assertIn("no GPU", attempts[0]["output"])
            os.remove(out)
            ok, attempts = bench.build_cuda(os.path.join(d, "missing-nvcc"), "x.cu", out,
                                            ["-arch=sm_90"])
            self.assertFalse(ok)

    def test_render_and_status_on_empty_and_failed_runs(self):
        args = vars(bench.parse_args(["b", "o"]))
        data = {"args": args, "samples": [], "summary": {}, "problems": []}
        text = bench.render_markdown(data)
        self.assertIn("| workload | unit | plain | neutracerd | ratio | profiler | ratio |", text)
        self.assertEqual(bench.exit_status(data), 0)
        data["samples"] = [{"workload": "cnn", "condition": "plain", "round": 1, "ok": False,
                            "value": None, "unit": "ms/step", "error": "boom", "result": {}}]
        data["summary"] = bench.summarize(data["samples"], ["cnn"])
        text = bench.render_markdown(data)
        self.assertIn("| n/a | n/a |", text)
        self.assertEqual(bench.exit_status(data), 1)
        data["samples"] = []
        data["leak"] = [{"mode": "exit", "tool": "neutracerd", "reported": False}]
        self.assertEqual(bench.exit_status(data), 1)
        data["leak"] = [{"mode": "exit", "tool": "compute-sanitizer", "reported": False,
                         "evidence": "no"}]
        self.assertEqual(bench.exit_status(data), 0)

    def test_bpf_programs_per_step(self):
        before = {"launch_handle_arg1": [100, 10_000], "call_enter": [5, 5_000]}
        after = {"launch_handle_arg1": [2_100, 410_000], "call_enter": [5, 5_000],
                 "os_sched_switch": [40, 40_000]}
        delta = bench.bpf_delta(before, after)
        self.assertEqual(delta, {"launch_handle_arg1": {"hits": 2_000, "ns": 400_000},
                                 "os_sched_switch": {"hits": 40, "ns": 40_000}})
        data = {"samples": [
            {"workload": "eager", "condition": "neutracerd", "bpf": delta,
             "result": {"iterations": 900, "warmup": 100}},
            {"workload": "eager", "condition": "plain", "bpf": delta,
             "result": {"iterations": 900, "warmup": 100}}]}
        rows = [r for r in bench.render_bpf(data) if r.startswith("| eager")]
        # 2000 hits over 1000 steps, 200 ns each: 0.4 µs per step; the plain run is not shown.
        self.assertEqual(rows[0], "| eager (iter) | `launch_handle_arg1` | 2.000 | 2000 | "
                                  "200.0 | 0.400 |")
        self.assertEqual(len(rows), 2)
        self.assertEqual(bench.render_bpf({"samples": []}), [])

    def test_quick_and_full_sizes(self):
        full = bench.parse_args(["b", "o"])
        self.assertEqual((full.reps, full.launches, full.eager_iters, full.cnn_steps,
                          full.tf_steps, full.cnn_warmup, full.tf_warmup),
                         (3, 1_000_000, 20_000, 200, 50, 20, 10))
        quick = bench.parse_args(["b", "o", "--quick", "--launches", "7"])
        self.assertEqual((quick.reps, quick.launches), (1, 7))
        self.assertEqual(bench.parse_args(["b", "o", "--quick", "--reps", "2"]).reps, 2)
        self.assertEqual(bench.parse_args(["b", "o"]).scan_interval, "2s")


def synthetic_run(seconds=120.0, truth=1.05, noise=0.01, drift=0.2, seed=7, t0=1000.0):
    """A chunked RESULT and its on-intervals: blocks of 0.75-1.25 s alternately off and on; each
    chunk (10 steps, 70 ms nominal) is `truth` times slower when it starts inside an on-block,
    times a slow drift of ±`drift` over 40 s, times Gaussian noise."""
    rng = random.Random(seed)
    on, t, state = [], t0, False
    while t < t0 + seconds + 2:
        length = rng.uniform(0.75, 1.25)
        if state:
            on.append((t, t + length))
        t += length
        state = not state
    ends, t = [], t0
    while t < t0 + seconds:
        inside = any(a <= t < b for a, b in on)
        t += (0.07 * (1 + drift * math.sin(2 * math.pi * (t - t0) / 40.0))
              * (truth if inside else 1.0) * (1 + rng.gauss(0, noise)))
        ends.append(t)
    return {"chunk_start": t0, "chunk_ends": ends, "chunk_steps": 10}, on


class Paired(unittest.TestCase):
    def test_cpus_config_and_windows(self):
        self.assertEqual(paired.parse_cpus("0-1", 16), [0, 1])
        self.assertEqual(paired.parse_cpus("2-", 16), list(range(2, 16)))
        self.assertEqual(paired.parse_cpus("0,3-4", 16, allowed={0, 1, 2, 3}), [0, 3])
        self.assertIsNone(paired.parse_cpus("2-", 2))
        text, period = paired.daemon_config("")
        self.assertEqual(text, paired.BASE_CONFIG)
        self.assertEqual(period, 2.0)
        text, _ = paired.daemon_config("stacks: {enabled: false}")
        self.assertEqual(text, paired.BASE_CONFIG + "stacks: {enabled: false}\n")
        text, period = paired.daemon_config(
            "cuda: {launch_counting: adaptive, launch_sample_fraction: 0.3, "
            "launch_sample_period: 1500ms}")
        self.assertNotIn("0.5", text)
        self.assertEqual(period, 1.5)
        with self.assertRaises(paired.SetupError):
            paired.daemon_config("cuda: {launch_counting: exact}")
        log = ("[2025-01-01 10:00:00.000] [info] listening\n"
               "[2025-01-01 10:00:02.000] [debug] pid 1234: launch probes on from 5000000000 to "
               "6000000000 ns (CLOCK_MONOTONIC)\n"
               "[2025-01-01 10:00:02.000] [debug] pid 999: launch probes on from 5100000000 to "
               "6100000000 ns (CLOCK_MONOTONIC)\n"
               "[2025-01-01 10:00:04.000] [debug] pid 1234: launch probes on from 7500000000 to "
               "8500000000 ns (CLOCK_MONOTONIC)\n")
        self.assertEqual(paired.parse_windows(log, 1234), [(5.0, 6.0), (7.5, 8.5)])
        self.assertEqual(paired.parse_windows(log, "999"), [(5.1, 6.1)])

    def test_classification(self):
        on = [(10.0, 12.0), (14.0, 15.0)]
        cases = [  # (chunk, label)
            ((4.9, 5.1), None),          # starts in the warm-up
            ((9.0, 9.7), ("off", 0)),    # ends before 10 - settle
            ((9.7, 9.8), None),          # inside the settle time before the transition
            ((9.9, 10.1), None),         # straddles the transition
            ((10.25, 10.5), ("on", 0)),
            ((11.6, 11.75), ("on", 0)),  # ends exactly at 12 - settle
            ((11.7, 11.8), None),
            ((12.1, 12.2), None),        # settling after on -> off
            ((12.3, 12.5), ("off", 1)),
            ((13.5, 13.8), None),        # too close to the next block
            ((14.3, 14.7), ("on", 1)),
            ((15.3, 15.5), ("off", 2)),  # after the last block
            ((16.0, 16.5), None),        # overlaps an excluded interval (+ settle)
            ((16.8, 17.2), ("off", 2)),
            ((19.9, 20.1), None),        # past the end
        ]
        chunks = [(a, b, 10) for (a, b), _ in cases]
        labels, left = paired.classify(chunks, on, 0.25, 5.0, 20.0, excluded=[(16.4, 16.5)])
        for (chunk, want), got in zip(cases, labels):
            self.assertEqual(got, want, chunk)
        self.assertEqual(left, {"warm-up": 1, "transition": 5, "start/stop of the toggler": 1,
                                "after the end": 1})

    def test_pairing(self):
        on = [(10.0, 11.0), (12.0, 13.0), (20.0, 21.0)]
        chunks = [(9.0, 9.5, 10), (10.3, 10.6, 10), (11.3, 11.5, 10), (12.3, 12.6, 10),
                  (20.3, 20.6, 10)]
        labels, _ = paired.classify(chunks, on, 0.25, 0.0, 30.0)
        blocks = paired.pair_blocks(chunks, labels, on)
        # Block 0: on 30 ms / 10 steps; off: 9.0-9.5 and 11.3-11.5 pooled, 700 ms / 20 steps.
        self.assertEqual([b["block"] for b in blocks], [0, 1])  # block 2 has no off neighbour
        self.assertEqual(blocks[0]["off_stretches"], [0, 1])
        self.assertAlmostEqual(blocks[0]["on_ns"], 30e6, delta=1e-3)
        self.assertAlmostEqual(blocks[0]["off_ns"], 35e6, delta=1e-3)
        self.assertAlmostEqual(blocks[0]["ratio"], 30 / 35)
        self.assertEqual(blocks[1]["off_stretches"], [1])
        self.assertAlmostEqual(blocks[1]["ratio"], 30 / 20)
        st = paired.ratio_stats(blocks)
        self.assertEqual(st["n"], 2)
        # They pool off-stretch 1 both; their covariance is negative: the plain error stays.
        self.assertEqual(st["shared_neighbours"], 1)
        self.assertLess(st["neighbour_cov"], 0)
        self.assertEqual(st["se"], st["se_plain"])
        mean = (30 / 35 + 30 / 20) / 2
        sd = abs(30 / 35 - 30 / 20) / math.sqrt(2)
        self.assertAlmostEqual(st["mean"], mean)
        self.assertAlmostEqual(st["half_width"], 12.706 * sd / math.sqrt(2))
        self.assertIsNone(paired.ratio_stats(blocks[:1])["ci"])
        self.assertEqual(paired.ratio_stats([])["n"], 0)

    def test_t_quantiles(self):
        self.assertEqual(paired.t975(1), 12.706)
        self.assertEqual(paired.t975(30), 2.042)
        self.assertTrue(2.021 < paired.t975(35) < 2.042)
        self.assertTrue(1.960 < paired.t975(1000) < 1.963)
        with self.assertRaises(ValueError):
            paired.t975(0)

    def test_known_ratio_without_noise(self):
        result, on = synthetic_run(seconds=60, noise=0.0, drift=0.0)
        out = paired.analyse(result, on, [], 0.25, 6.0)
        st = out["stats"]
        self.assertGreater(st["n"], 15)
        self.assertAlmostEqual(st["mean"], 1.05, places=6)
        self.assertAlmostEqual(st["median"], 1.05, places=6)
        self.assertLess(st["half_width_pct"], 1e-6)
        self.assertAlmostEqual(out["off_ns_per_step"], 7e6, delta=1)
        cost, ci = paired.cost_per_launch(st, out["off_ns_per_step"], 2.0)
        self.assertAlmostEqual(cost, 0.05 * 7e6 / 2, delta=1)

    def test_interval_covers_the_true_ratio_despite_drift(self):
        for seed in (1, 2, 3):
            result, on = synthetic_run(seed=seed)
            out = paired.analyse(result, on, [], 0.25, 6.0)
            st = out["stats"]
            self.assertGreater(st["n"], 40)
            self.assertLessEqual(st["ci"][0], 1.05, (seed, st))
            self.assertGreaterEqual(st["ci"][1], 1.05, (seed, st))
            self.assertLess(st["half_width_pct"], 1.0, (seed, st))
            self.assertGreaterEqual(st["se"], st["se_plain"])
            self.assertGreater(out["left_out_by_reason"]["transition"], 0)
            self.assertGreater(out["left_out_by_reason"]["warm-up"], 0)
        # The same drift between two fresh runs 20 s apart would read as a large difference.
        chunks = paired.chunks_of(result)
        t0 = result["chunk_start"]
        early = paired.per_step_ns([c for c in chunks if c[0] < t0 + 10])
        later = paired.per_step_ns([c for c in chunks if t0 + 20 <= c[0] < t0 + 30])
        self.assertGreater(early / later - 1, 0.15)

    def test_launches_per_step_and_costs(self):
        chunks = [(i * 0.1, (i + 1) * 0.1, 100) for i in range(10)]
        self.assertAlmostEqual(paired.launches_from_hits(chunks, [(0.25, 0.75, 1000)]), 2.0)
        # The step rate comes from the chunks inside: a cut chunk (here twice as long) does not
        # count pro rata.
        chunks[2] = (0.2, 0.4, 100)
        del chunks[3]
        self.assertAlmostEqual(paired.launches_from_hits(chunks, [(0.25, 0.75, 1000)]), 2.0)
        # An interval reaching before the first chunk (warm-up launches) is not used.
        self.assertIsNone(paired.launches_from_hits(chunks, [(-0.5, 0.5, 9999)]))
        self.assertAlmostEqual(paired.launches_from_hits(
            chunks, [(-0.5, 0.5, 9999), (0.25, 0.75, 1000)]), 2.0)
        stats = {"n": 5, "mean": 1.1, "median": 1.09, "ci": [1.05, 1.15],
                 "half_width_pct": 4.5}
        rows = [{"workload": "cnn", "toggler": "bare", "measured_launches_per_step": 50.0,
                 "stats": stats, "off_ns_per_step": 5e6},
                {"workload": "cnn", "toggler": "daemon", "stats": stats, "off_ns_per_step": 5e6},
                {"workload": "raw", "toggler": "bare", "measured_launches_per_step": 0.98,
                 "stats": stats, "off_ns_per_step": 2000.0},
                {"workload": "transformer", "toggler": "daemon", "stats": stats,
                 "off_ns_per_step": 1.0},
                {"workload": "eager", "toggler": "daemon", "status": "skipped", "stats": None}]
        paired.fill_costs(rows)
        self.assertEqual(rows[1]["launches_per_step"], 50.0)  # counted by the bare row
        self.assertEqual(rows[1]["launches_per_step_source"], "counted by symhits")
        self.assertAlmostEqual(rows[1]["cost_ns"], 0.1 * 5e6 / 50)
        self.assertAlmostEqual(rows[1]["cost_ci_ns"][0], 0.05 * 5e6 / 50)
        self.assertEqual(rows[2]["launches_per_step"], 1.0)  # raw: one by construction
        self.assertAlmostEqual(rows[2]["cost_ns"], 200.0)
        self.assertIsNone(rows[3]["cost_ns"])  # launches per step unknown
        paired.fill_costs(rows, {"transformer": 400.0})
        self.assertAlmostEqual(rows[3]["cost_ns"], 0.1 / 400)
        text = "\n".join(paired.table(rows))
        self.assertIn("| cnn | daemon | ", text)
        self.assertIn("+10000 ns [+5000, +15000]", text)
        self.assertIn("skipped", text)

    def test_fake_run_sees_each_toggler(self):
        with tempfile.TemporaryDirectory() as out:
            cmd = [sys.executable, os.path.join(HERE, "paired.py"), "/nonexistent", out, "--fake",
                   "--workloads", "eager", "--togglers", "daemon,bare,exact,profiler",
                   "--seconds", "11",
                   "--warmup", "3", "--port", str(free_port()), "--seed", "3"]
            res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 timeout=240)
            self.assertEqual(res.returncode, 0, res.stdout[-3000:])
            with open(os.path.join(out, "paired.json")) as f:
                data = json.load(f)
            with open(os.path.join(out, "paired.md")) as f:
                md = f.read()
        rows = {r["toggler"]: r for r in data["rows"]}
        self.assertEqual(sorted(rows), ["bare", "daemon", "exact", "profiler"])
        for name, row in rows.items():
            self.assertEqual(row["status"], "ok", row)
            # the fake on-states slow it
            self.assertGreater(row["stats"]["mean"], 1.01, (name, md, res.stdout[-2000:]))
            self.assertGreater(row["stats"]["n"], 1, name)
            self.assertGreater(row["left_out"], 0, name)
        self.assertGreater(rows["profiler"]["stats"]["mean"], 1.15)
        self.assertGreater(rows["daemon"]["on_intervals"], 2)  # windows read from the log
        self.assertAlmostEqual(rows["bare"]["measured_launches_per_step"], 2.0, delta=0.2)
        # the daemon's program, counted through its own map
        self.assertAlmostEqual(rows["exact"]["measured_launches_per_step"], 2.0, delta=0.2)
        self.assertEqual(rows["daemon"]["launches_per_step_source"], "counted by symhits")
        self.assertIsNotNone(rows["daemon"]["cost_ns"])
        self.assertIn("| eager | profiler | ", md)
        self.assertIn("daemon − bare", md)
        self.assertIn("exact − bare", md)
        self.assertEqual(fake_daemons(), [])

    def test_budget_skips_pairs(self):
        with tempfile.TemporaryDirectory() as out:
            cmd = [sys.executable, os.path.join(HERE, "paired.py"), "/nonexistent", out, "--fake",
                   "--workloads", "raw,eager", "--togglers", "daemon,profiler", "--seconds", "30",
                   "--budget-minutes", "0.2", "--port", str(free_port())]
            res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 timeout=120)
            self.assertEqual(res.returncode, 1, res.stdout[-3000:])
            with open(os.path.join(out, "paired.json")) as f:
                data = json.load(f)
            with open(os.path.join(out, "paired.md")) as f:
                md = f.read()
        # raw x profiler is never run; the other three do not fit in 12 s.
        self.assertEqual([(r["workload"], r["toggler"], r["status"]) for r in data["rows"]],
                         [("raw", "daemon", "skipped"), ("eager", "daemon", "skipped"),
                          ("eager", "profiler", "skipped")])
        self.assertEqual(len(data["skipped"]), 3)
        self.assertIn("Skipped: raw / daemon: needs about 34 s", md)

    def test_setup_errors(self):
        with tempfile.TemporaryDirectory() as out:
            base = [sys.executable, os.path.join(HERE, "paired.py"), "/nonexistent", out, "--fake",
                    "--port", str(free_port())]
            res = subprocess.run(base + ["--daemon-config", "cuda: {launch_counting: exact}"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 timeout=60)
            self.assertEqual(res.returncode, 2, res.stdout)
            self.assertIn("must set launch_counting: adaptive", res.stdout)
            res = subprocess.run(base + ["--togglers", "nope"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, timeout=60)
            self.assertEqual(res.returncode, 2, res.stdout)

    def test_run_py_method_paired(self):
        with tempfile.TemporaryDirectory() as out:
            rc, text, data = dry_run(out, "--method", "paired", "--sections", "bench",
                                     "--workloads", "raw", "--paired-seconds", "9",
                                     "--paired-warmup", "3")
            self.assertEqual(rc, 0, text[-3000:])
            with open(os.path.join(out, "bench.md")) as f:
                md = f.read()
            self.assertTrue(os.path.isfile(os.path.join(out, "paired", "paired.json")))
        self.assertEqual(data["samples"], [])
        rows = data["paired"]["rows"]
        self.assertEqual([(r["workload"], r["toggler"]) for r in rows],
                         [("raw", "daemon"), ("raw", "bare")])  # no profiler for raw
        for r in rows:
            self.assertEqual(r["status"], "ok", r)
            self.assertGreater(r["stats"]["mean"], 1.01)
            self.assertEqual(r["launches_per_step"], 1.0)
        self.assertIn("## Overhead, paired inside one process", md)
        self.assertIn("| raw | daemon | ", md)
        self.assertNotIn("| workload | unit | plain |", md)
        self.assertIn("## Problems\n\nnone", md)
        self.assertEqual(fake_daemons(), [])


class CountError(unittest.TestCase):
    def test_fake_rounds_compare_exact_and_sampled(self):
        with tempfile.TemporaryDirectory() as out:
            cmd = [sys.executable, os.path.join(HERE, "count_error.py"), "/nonexistent", out,
                   "--fake", "--rounds", "2", "--iterations", "300", "--no-plain", "--port",
                   str(free_port()), "--sampled-config",
                   "cuda: {launch_counting: adaptive, launch_sample_period: 1s}"]
            res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 timeout=180,
                                 env=dict(os.environ, NT_BENCH_FAKE_SAMPLING_ERROR="0.05"))
            self.assertEqual(res.returncode, 0, res.stdout[-3000:])
            with open(os.path.join(out, "count_error.md")) as f:
                md = f.read()
            with open(os.path.join(out, "count_error.json")) as f:
                data = json.load(f)
            with open(os.path.join(out, "r1-exact.log")) as f:
                self.assertNotIn("adaptive", f.read())
        self.assertEqual([(r["round"], r["condition"]) for r in data["runs"]],
                         [(1, "exact"), (1, "sampled"), (2, "exact"), (2, "sampled")])
        # 300 + 20 warm-up steps, two launches each: exact 640, sampled 5 % more.
        self.assertEqual([r["launches"] for r in data["runs"]], [640, 672, 640, 672])
        self.assertIn("sampled `cuda: {launch_counting: adaptive, launch_sample_period: 1s}`", md)
        self.assertIn("| 2 | sampled |", md)
        self.assertIn("sampled vs exact, each round's relative error: r1 +5.00 %, r2 +5.00 %; "
                      "mean |error| 5.00 %, largest 5.00 % (2 round(s))", md)
        self.assertEqual(fake_daemons(), [])


class StacksCost(unittest.TestCase):
    @staticmethod
    def sample(workload, condition, value, bpf=None):
        return {"workload": workload, "condition": condition, "ok": True, "value": value,
                "result": {"iterations": 90, "warmup": 10}, "bpf": bpf or {}}

    def test_report_pairs_the_conditions_and_the_programs(self):
        runs = [
            ("off", {"samples": [self.sample("cnn", "plain", 5.0),
                                 self.sample("cnn", "neutracerd", 5.2,
                                             {"call_enter": {"hits": 100, "ns": 20_000}})]}),
            ("on", {"samples": [self.sample("cnn", "plain", 5.1),
                                self.sample("cnn", "neutracerd", 5.72,
                                            {"call_enter": {"hits": 100, "ns": 90_000}}),
                                dict(self.sample("cnn", "neutracerd", 99.0), ok=False)]}),
        ]
        report = stacks_cost.render(runs)
        # The failed run is left out: on/off = 5.72 / 5.2.
        self.assertIn("| cnn | 5.050 (5.000–5.100) | 5.200 | 5.720 | 1.100 |", report)
        # 200 ns per hit off, 900 on; one hit per step in both.
        self.assertIn("| cnn | `call_enter` | 200.0 | 900.0 | 1.000 | 1.000 |", report)
        self.assertNotIn("BPF programs", stacks_cost.render([("on", {"samples": []})]))

    def test_dry_run_alternates_the_conditions(self):
        with tempfile.TemporaryDirectory() as out:
            res = subprocess.run(
                [sys.executable, os.path.join(HERE, "stacks_cost.py"), "/nonexistent/neutracerd",
                 out, "--rounds", "2", "--", "--dry-run", "--quick", "--port", str(free_port())],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
            self.assertEqual(res.returncode, 0, res.stdout[-2000:])
            order = [line.split("stacks ")[1].split(":")[0] for line in res.stdout.splitlines()
                     if line.startswith("[stacks_cost] round")]
            self.assertEqual(order, ["off", "on", "on", "off"])
            with open(os.path.join(out, "off-1", "bench.json")) as f:
                self.assertTrue(json.load(f)["args"]["daemon_config"].endswith("stacks-off.yaml"))
            with open(os.path.join(out, "on-1", "bench.json")) as f:
                self.assertIsNone(json.load(f)["args"]["daemon_config"])
            with open(os.path.join(out, "stacks_cost.md")) as f:
                self.assertIn("| eager |", f.read())


class DryRuns(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ntb_test_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        self.assertEqual(fake_daemons(), [], "a (fake) neutracerd was left running")

    def test_clean_run(self):
        rc, out, data = dry_run(self.tmp, "--reps", "2", "--quick")
        self.assertEqual(rc, 0, out[-3000:])
        self.assertEqual(data["rounds_done"], 2)
        self.assertEqual(data["problems"], [])
        # Every workload x condition twice, except the raw program under the profiler.
        seen = sorted((s["workload"], s["condition"], s["round"]) for s in data["samples"])
        want = sorted((w, c, r) for w in bench.WORKLOAD_ORDER for c in bench.CONDITIONS
                      for r in (1, 2) if not (w == "raw" and c == "profiler"))
        self.assertEqual(seen, want)
        self.assertTrue(all(s["ok"] for s in data["samples"]))
        # Interleaving: per workload, conditions alternate plain, neutracerd, profiler.
        for w in bench.WORKLOAD_ORDER:
            order = [s["condition"] for s in data["samples"] if s["workload"] == w]
            expect = ["plain", "neutracerd"] + ([] if w == "raw" else ["profiler"])
            self.assertEqual(order, expect * 2)
        # The daemon's count of the raw loop, exact.
        self.assertEqual(len(data["launch_checks"]), 2)
        for c in data["launch_checks"]:
            self.assertTrue(c["exact"])
            self.assertEqual(c["launched"], 200_000 + 5_000)
        # Fake slow-downs show as ratios above 1.
        for w, row in data["summary"].items():
            self.assertGreater(row["ratio_neutracerd"], 1.0, w)
            if w != "raw":
                self.assertGreater(row["ratio_profiler"], 1.3, w)
        # Leak: neutracerd reports both; the fake sanitizer only after cudaDeviceReset.
        leak = {(e["mode"], e["tool"]): e for e in data["leak"]}
        self.assertEqual(len(leak), 6)
        self.assertIs(leak[("exit", "neutracerd")]["reported"], True)
        self.assertIs(leak[("reset", "neutracerd")]["reported"], True)
        self.assertEqual(leak[("exit", "neutracerd")]["held_at_exit_bytes_delta"], 100 * 4 << 20)
        self.assertIs(leak[("exit", "compute-sanitizer")]["reported"], False)
        self.assertIs(leak[("reset", "compute-sanitizer")]["reported"], True)
        self.assertIsNone(leak[("exit", "plain")]["reported"])
        # Three daemon sessions (two rounds and the leak), each stopped cleanly.
        self.assertEqual([d["label"] for d in data["daemon_sessions"]],
                         ["r1-neutracerd", "r2-neutracerd", "leak-neutracerd"])
        self.assertTrue(all(d["exit"] == 0 and d["holder"] for d in data["daemon_sessions"]))
        with open(os.path.join(self.tmp, "bench.md")) as f:
            md = f.read()
        self.assertIn("| raw CUDA launch loop", md)
        self.assertIn("| n/a | n/a |", md)  # raw loop: profiler not applicable
        self.assertIn("LEAK SUMMARY", md)
        self.assertIn("## Problems\n\nnone", md)

    def test_miscount_fails(self):
        rc, out, data = dry_run(self.tmp, "--quick", "--sections", "bench",
                                "--workloads", "raw", env={"NT_BENCH_FAKE_DROP": "3"})
        self.assertEqual(rc, 1, out[-3000:])
        c = data["launch_checks"][0]
        self.assertFalse(c["exact"])
        self.assertEqual(c["launched"] - c["counted"], 3)
        self.assertIn("after 2 scan(s)", c["how"])
        self.assertTrue(any("counted" in p for p in data["problems"]))

    def test_failing_workload_is_reported_and_others_go_on(self):
        rc, out, data = dry_run(self.tmp, "--quick", "--sections", "bench",
                                "--workloads", "eager,cnn", env={"NT_BENCH_FAKE_FAIL": "cnn"})
        self.assertEqual(rc, 1, out[-3000:])
        cnn = [s for s in data["samples"] if s["workload"] == "cnn"]
        eager = [s for s in data["samples"] if s["workload"] == "eager"]
        self.assertEqual(len(cnn), 3)
        self.assertTrue(all(not s["ok"] and "status 4" in s["error"] for s in cnn))
        self.assertTrue(all(s["ok"] for s in eager))
        self.assertEqual(len(eager), 3)

    def test_budget_cut(self):
        rc, out, data = dry_run(self.tmp, "--quick", "--reps", "3", "--sections", "bench",
                                "--workloads", "raw,eager", "--budget-minutes", "0.12",
                                "--leak-reserve-s", "0")
        self.assertEqual(rc, 0, out[-3000:])
        self.assertGreaterEqual(data["rounds_done"], 1)
        self.assertLess(data["rounds_done"], 3)
        self.assertIn("budget", data["cut_reason"])

    def test_busy_port_is_a_setup_error(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen(1)
            port = s.getsockname()[1]
            cmd = [sys.executable, RUN, "/nonexistent", self.tmp, "--dry-run", "--quick",
                   "--port", str(port)]
            res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, timeout=60)
        self.assertEqual(res.returncode, 2, res.stdout[-2000:])
        self.assertIn("already listens", res.stdout)

    def test_sigterm_stops_the_daemon(self):
        cmd = [sys.executable, RUN, "/nonexistent", self.tmp, "--dry-run", "--reps", "1",
               "--port", str(free_port())]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        log = os.path.join(self.tmp, "logs", "daemon-r1-neutracerd.log")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not os.path.exists(log):
            time.sleep(0.1)
        time.sleep(1.0)
        self.assertTrue(fake_daemons(), "the fake daemon should be running now")
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 130, out[-2000:])
        with open(os.path.join(self.tmp, "bench.json")) as f:
            data = json.load(f)
        self.assertIn("interrupted", data["fatal"])
        self.assertEqual(data["daemon_sessions"][0]["exit"], 0)


@unittest.skipUnless(os.environ.get("NT_BENCH_TEST_BINARY") and os.environ.get("NT_BENCH_TEST_STANDIN")
                     and os.geteuid() == 0,
                     "set NT_BENCH_TEST_BINARY (neutracerd) and NT_BENCH_TEST_STANDIN (folder with "
                     "neutracer-scenario and libcuda.so.1), as root")
class StandinRun(unittest.TestCase):
    """run.py --standin: the real daemon counts the stand-in's launches and sees the leak."""

    def test_real_daemon_with_standin_driver(self):
        tmp = tempfile.mkdtemp(prefix="ntb_standin_")
        cmd = [sys.executable, RUN, os.environ["NT_BENCH_TEST_BINARY"], tmp, "--standin",
               os.environ["NT_BENCH_TEST_STANDIN"], "--quick", "--workloads", "raw,eager",
               "--port", str(free_port())]
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             timeout=300)
        self.addCleanup(shutil.rmtree, tmp, True)
        self.assertEqual(res.returncode, 0, res.stdout[-3000:])
        with open(os.path.join(tmp, "bench.json")) as f:
            data = json.load(f)
        self.assertTrue(data["launch_checks"][0]["exact"])
        self.assertEqual(data["launch_checks"][0]["by_kernel"], {"nt_bench_empty": 205000})
        leak = [e for e in data["leak"] if e["tool"] == "neutracerd"]
        self.assertEqual(len(leak), 2)
        for e in leak:
            self.assertTrue(e["reported"], e)
            self.assertEqual(e["gpu_bytes_in_use"], 100 * 4 << 20)
            self.assertTrue(e["logged"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
