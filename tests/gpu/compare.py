#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compares workload ground truth with neutracerd's scrapes; writes OUTDIR/results.md.

Usage: compare.py OUTDIR [WORKLOAD...]

Reads, per workload W (written by orchestrate.py / workloads.py):
  W.run.json, W.truth.json, W.metrics, W.kernels.json, W.<checkpoint>.metrics/.kernels.json
and OUTDIR/final.metrics (daemon health) if present.
Prints rows `workload | quantity | ground truth | neutracerd | match` and exits 1 if any row
does not match (rows marked "info" never fail), 2 if there was nothing to compare.
"""
import collections
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from nt_common import parse_prometheus, select, short_kernel_name  # noqa: E402

ORDER = ["nvcc_static", "copies", "triton", "cublas", "torch_ops"]
PSEUDO = ["[unresolved]", "[other]", "[cuda_graph]"]
LAUNCHES = "neutracer_cuda_kernel_launches_total"


class Table:
    def __init__(self):
        self.rows = []

    def add(self, workload, quantity, truth, got, mode="exact"):
        if mode == "info":
            match = "info"
        elif truth is None or got is None:
            match = "NO"
        elif mode == "at_least":
            match = "yes (>=)" if _num(got) >= _num(truth) else "NO"
        elif isinstance(truth, (int, float)) and isinstance(got, (int, float)):
            match = "yes" if math.isclose(float(truth), float(got), rel_tol=0, abs_tol=1e-9) else "NO"
        else:
            match = "yes" if truth == got else "NO"
        self.rows.append((workload, quantity, _fmt(truth), _fmt(got), match))

    def failed(self):
        return [r for r in self.rows if r[4] == "NO"]


def _num(x):
    return float(x) if isinstance(x, (int, float)) else float("nan")


def _fmt(x):
    if x is None:
        return "-"
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


class Scrape:
    """One saved /metrics + /api/v1/kernels pair (or an all-zero stand-in for `from: null`)."""

    def __init__(self, outdir, workload, checkpoint):
        self.samples, self.kernels = [], {"processes": []}
        self.present = checkpoint is None
        if checkpoint is None:
            return
        base = workload if checkpoint == "done" else f"{workload}.{checkpoint}"
        mpath = os.path.join(outdir, base + ".metrics")
        kpath = os.path.join(outdir, base + ".kernels.json")
        if os.path.exists(mpath):
            with open(mpath, encoding="utf-8") as f:
                self.samples = parse_prometheus(f.read())
            self.present = True
        if os.path.exists(kpath):
            with open(kpath, encoding="utf-8") as f:
                self.kernels = json.load(f)

    def value(self, metric, pid, labels):
        return sum(v for _, v in select(self.samples, metric, pid=pid, **labels))

    def launches(self, pid):
        out = collections.Counter()
        for labels, v in select(self.samples, LAUNCHES, pid=pid):
            out[labels.get("kernel", "?")] += v
        return out

    def process(self, pid):
        for p in self.kernels.get("processes", []):
            if int(p.get("pid", -1)) == int(pid):
                return p
        return None

    def full_names(self, pid):
        """label -> set of full (demangled) names, from /api/v1/kernels."""
        p = self.process(pid)
        out = {}
        for k in (p or {}).get("kernels", []):
            out[k["kernel"]] = set(k.get("full_names", []))
        return out

    def json_launches(self, pid):
        p = self.process(pid)
        return {k["kernel"]: k.get("launches", 0) for k in (p or {}).get("kernels", [])}


def _squash(name):
    return re.sub(r"\s+", "", name)


def map_raw_names(raw_counts, full_names):
    """Map profiler (raw, demangled) names to daemon labels. Returns (label counts, notes)."""
    exact, squashed = {}, {}
    for label, names in full_names.items():
        for n in names:
            exact.setdefault(n, label)
            squashed.setdefault(_squash(n), label)
    expected = collections.Counter()
    notes = []
    for raw, count in sorted(raw_counts.items()):
        if raw in exact:
            label = exact[raw]
        elif _squash(raw) in squashed:
            label = squashed[_squash(raw)]
            notes.append(f"matched ignoring whitespace: {raw}")
        else:
            label = short_kernel_name(raw)
            notes.append(f"not in full_names, shortened locally to '{label}': {raw}")
        expected[label] += count
    return expected, notes


def compare_workload(outdir, name, table, notes):
    run_path = os.path.join(outdir, f"{name}.run.json")
    truth_path = os.path.join(outdir, f"{name}.truth.json")
    run = json.load(open(run_path)) if os.path.exists(run_path) else {"status": "missing"}
    table.add(name, "workload ran", "ok", run.get("status"))
    if run.get("status") != "ok":
        notes.append(f"{name}: {run.get('error', 'no run record')} (see {name}.stderr)")
    if not os.path.exists(truth_path):
        table.add(name, "ground truth file", "present", "missing")
        return
    truth = json.load(open(truth_path))
    pid = truth.get("pid", run.get("pid"))
    scrapes = {}

    def scrape(cp):
        if cp not in scrapes:
            scrapes[cp] = Scrape(outdir, name, cp)
            if not scrapes[cp].present:
                table.add(name, f"scrape '{cp}'", "present", "missing")
        return scrapes[cp]

    done = scrape("done")
    if done.process(pid) is None and not select(done.samples, "neutracer_cuda_memory_used_bytes",
                                                pid=pid):
        table.add(name, f"pid {pid} in neutracerd output", "present", "missing")
        return

    # Kernel launch checks.
    for check in truth.get("kernel_checks", []):
        mode = check.get("mode", "exact")
        frm, to = scrape(check.get("from")), scrape(check.get("to", "done"))
        before, after = frm.launches(pid), to.launches(pid)
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in set(after) | set(before)}
        delta = {k: v for k, v in delta.items() if v != 0}
        full = to.full_names(pid)
        if "labels" in check:
            expected = collections.Counter(check["labels"])
        else:
            expected, map_notes = map_raw_names(check.get("raw_counts", {}), full)
            notes.extend(f"{name}: {n}" for n in map_notes)
        desc = check.get("desc", "kernels")
        table.add(name, f"{desc}: total launches", sum(expected.values()),
                  sum(delta.values()), mode)
        for label in sorted(set(expected) | set(delta)):
            table.add(name, f"{desc}: {label}", expected.get(label, 0), delta.get(label, 0), mode)
        for label, full_name in sorted(check.get("full_names", {}).items()):
            names = full.get(label, set())
            table.add(name, f"full name of {label}", full_name,
                      full_name if full_name in names else (" / ".join(sorted(names)) or None), mode)

    # Metric checks.
    for check in truth.get("metric_checks", []):
        frm, to = scrape(check.get("from")), scrape(check.get("to", "done"))
        labels = check.get("labels", {})
        got = to.value(check["metric"], pid, labels) - frm.value(check["metric"], pid, labels)
        span = "" if check.get("from") is None and check.get("to", "done") == "done" else \
            f" [{check.get('from') or 'attach'}->{check.get('to', 'done')}]"
        table.add(name, check.get("desc", check["metric"]) + span, check["expected"], got,
                  check.get("mode", "exact"))

    # Checks common to every workload.
    launches = done.launches(pid)
    for pseudo in PSEUDO:
        table.add(name, f"launches labelled {pseudo}", 0, launches.get(pseudo, 0))
    json_total = sum(done.json_launches(pid).values())
    table.add(name, "/api/v1/kernels launches == /metrics launches", sum(launches.values()),
              json_total)
    errors = select(done.samples, "neutracer_cuda_api_errors_total", pid=pid)
    for labels, v in errors:
        table.add(name, f"api error {labels.get('api')} {labels.get('error')}", 0, v, "info")
    waits = sum(v for _, v in select(done.samples, "neutracer_cuda_sync_wait_seconds_total", pid=pid))
    table.add(name, "sync wait seconds (any api)", "-", round(waits, 6), "info")
    info = truth.get("info", {})
    if "profiler_trace_kernels" in info:
        table.add(name, "profiler: trace kernels == events() kernels",
                  info["profiler_trace_kernels"], info.get("profiler_events_kernels"), "info")
    if "mem_at_ready" in info:
        table.add(name, "torch reserved bytes at READY (invisible to neutracerd)", 0,
                  info["mem_at_ready"].get("reserved"), "info")
    for cp, stable in run.get("stable", {}).items():
        if not stable:
            notes.append(f"{name}: metrics were still changing when scraped at '{cp}'")


def compare_daemon(outdir, table):
    path = os.path.join(outdir, "final.metrics")
    if not os.path.exists(path):
        return
    samples = parse_prometheus(open(path, encoding="utf-8").read())

    def total(metric):
        return sum(v for _, v in select(samples, metric))

    table.add("daemon", "events dropped (ring buffer + malformed)", 0,
              total("neutracer_events_dropped_total"))
    table.add("daemon", "probe attach errors", 0, total("neutracer_probe_attach_errors_total"))
    table.add("daemon", "BPF map update errors", 0, total("neutracer_bpf_map_update_errors_total"))
    table.add("daemon", "attached probes", "-", total("neutracer_attached_probes"), "info")
    table.add("daemon", "probed symbols missing in this driver", "-",
              total("neutracer_probe_symbols_missing"), "info")


def escape(cell):
    return str(cell).replace("|", "\\|").replace("\n", " ")


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    outdir = sys.argv[1]
    names = sys.argv[2:]
    if not names:
        found = {f[:-len(".run.json")] for f in os.listdir(outdir) if f.endswith(".run.json")}
        names = [n for n in ORDER if n in found] + sorted(found - set(ORDER))
    if not names:
        print(f"compare.py: no workload results (*.run.json) in {outdir}", file=sys.stderr)
        sys.exit(2)
    table, notes = Table(), []
    for name in names:
        try:
            compare_workload(outdir, name, table, notes)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            table.add(name, "comparison", "ok", f"error: {exc}")
    compare_daemon(outdir, table)

    header = ("workload", "quantity", "ground truth", "neutracerd", "match")
    failed = table.failed()
    lines = ["# neutracerd GPU validation", "",
             f"{len(table.rows)} rows, {len(failed)} mismatches.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in table.rows]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {escape(n)}" for n in notes]
    md = "\n".join(lines) + "\n"
    with open(os.path.join(outdir, "results.md"), "w", encoding="utf-8") as f:
        f.write(md)

    widths = [max(len(str(r[i])) for r in table.rows + [header]) for i in range(5)]
    widths[1] = min(widths[1], 90)
    for row in [header] + table.rows:
        print(" | ".join(str(c)[:200].ljust(w) for c, w in zip(row, widths)).rstrip())
    for n in notes:
        print(f"note: {n}")
    print(f"\n{len(failed)} mismatches out of {len(table.rows)} rows; table in "
          f"{os.path.join(outdir, 'results.md')}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
