#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Paired statistics of investigate.py's samples.jsonl: the added time per trap, mean ± standard
error and median over rounds, for the full plan (timings: plain / bare / neutracerd, one sample
each per round) and the follow-up plan (paired conditions within each round).

    analyze.py RESULTS_DIR [RESULTS_DIR...]      (a folder holding samples.jsonl)
"""
import json
import math
import os
import statistics as st
import sys


def show(label, diffs, per):
    d = [x / per for x in diffs if x is not None]
    if len(d) < 2:
        return
    m, se = st.mean(d), st.stdev(d) / math.sqrt(len(d))
    print(f"  {label:62} mean {m:7.0f} ns  s.e. {se:5.0f}  median {st.median(d):7.0f}  "
          f"rounds {len(d):2}  negative {sum(1 for x in d if x < 0)}")


def full(rows, launches):
    t = [r for r in rows if r["kind"] == "timing"]
    rounds = sorted({r["round"] for r in t})
    scale = {"eager": 1e3, "cnn": 1e6, "launch": 1.0}  # value unit -> ns
    for w in ("eager", "cnn", "launch"):
        for c in ("bare", "neutracerd"):
            diffs = []
            for r in rounds:
                v = {x["cond"]: x["value"] for x in t if x["workload"] == w and x["round"] == r}
                if c in v and "plain" in v:
                    diffs.append((v[c] - v["plain"]) * scale[w])
            show(f"{w}: {c} - plain, per launch ({launches[w]} launches/iter)", diffs,
                 launches[w])


def follow(rows):
    f = [r for r in rows if r["kind"] == "follow"]
    rounds = sorted({r["round"] for r in f})

    def v(proc, what, cond, r):
        xs = [x["ns"] for x in f if (x["proc"], x["what"], x["cond"], x["round"]) ==
              (proc, what, cond, r)]
        return st.mean(xs) if xs else None

    def diff(a, b):
        return [None if a(r) is None or b(r) is None else a(r) - b(r) for r in rounds]

    def V(*k):
        return lambda r: v(*k, r)

    extra = {}
    for h in rows:
        if h.get("kind") == "follow-hits" and h.get("iterations") and h["counts"]:
            extra.setdefault(h["cond"], []).append(sum(h["counts"].values()) / h["iterations"])
    lk = V("torch", "eager", "plain")
    pooled = (diff(V("torch", "eager", "bare-launch"), lk) +
              diff(V("torch", "eager", "bare-launch-multi"), lk) +
              diff(V("torch", "eagerx2 nt_noop_twin", "bare-launch"),
                   V("torch", "eagerx2 nt_noop_twin", "plain")))
    show("cuLaunchKernel in the eager loop, perf uprobe", diff(V("torch", "eager", "bare-launch"), lk), 2)
    show("cuLaunchKernel in the eager loop, uprobe_multi", diff(V("torch", "eager", "bare-launch-multi"), lk), 2)
    show("cuLaunchKernel in the eager loop + 2 twin calls", diff(
        V("torch", "eagerx2 nt_noop_twin", "bare-launch"), V("torch", "eagerx2 nt_noop_twin", "plain")), 2)
    show("cuLaunchKernel in the eager loop, the three pooled", pooled, 2)
    for cond, ks in extra.items():
        k = st.median(ks)
        show(f"{cond[5:]} in the eager loop ({k:.1f}/iter)", diff(V("torch", "eager", cond), lk), k)
    show("probe on a never-called libcuda function (per iter / 2)",
         diff(V("torch", "eager", "probe-never-hit"), lk), 2)
    for k in (1, 2, 8):
        show(f"nt_noop in the eager loop, {k}/iter", diff(V("torch", f"eagerx{k} nt_noop", "plain"),
                                                        V("torch", f"eagerx{k} nt_noop_twin", "plain")), k)
    show("nt_noop, tight ctypes loop, PyTorch process", diff(V("torch", "call nt_noop", "plain"),
                                                            V("torch", "call nt_noop_twin", "plain")), 1)
    show("cuLaunchKernel, raw CUDA C++ loop", diff(V("raw", "launch", "bare-launch"), V("raw", "launch", "plain")), 1)
    show("nt_noop before each raw launch", diff(V("raw", "launchx nt_noop", "plain"),
                                               V("raw", "launchx nt_noop_twin", "plain")), 1)
    show("nt_noop after ~6 us of Python work", diff(V("py", "pyworkx nt_noop", "plain"),
                                                   V("py", "pyworkx nt_noop_twin", "plain")), 1)
    show("nt_noop, tight ctypes loop, plain Python", diff(V("py", "call nt_noop", "plain"),
                                                         V("py", "call nt_noop_twin", "plain")), 1)
    show("nt_noop, tight C loop", diff(V("c", "call nt_noop", "plain"), V("c", "call nt_noop_twin", "plain")), 1)
    show("nt_noop then nt_work, C", diff(V("c", "pair nt_noop", "plain"), V("c", "pair nt_noop_twin", "plain")), 1)
    pp = [abs(a - b) for a, b in (([x["ns"] for x in f if x["proc"] == "torch" and x["what"] == "eager"
                                    and x["cond"] == "plain" and x["round"] == r] + [None, None])[:2]
                                  for r in rounds) if a is not None and b is not None]
    allp = [x["ns"] for x in f if x["proc"] == "torch" and x["what"] == "eager" and x["cond"] == "plain"]
    if pp:
        print(f"  noise: two plain eager samples of one round differ by median {st.median(pp):.0f}, "
              f"max {max(pp):.0f} ns/iter; all plain samples: mean {st.mean(allp):.0f}, "
              f"sd {st.stdev(allp):.0f}, min {min(allp):.0f}, max {max(allp):.0f} ns/iter")


def main():
    for folder in sys.argv[1:]:
        with open(os.path.join(folder, "samples.jsonl")) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        launches = {"eager": 2, "cnn": 198, "launch": 1}
        calls = os.path.join(folder, "calls.txt")
        if os.path.exists(calls):  # launches per iteration as counted by symhits
            text = open(calls).read()
            for w, head in (("eager", "### torch eager"), ("cnn", "### torch cnn")):
                if head in text:
                    block = text.split(head, 1)[1].split("###", 1)[0]
                    n = sum(float(line.split()[1]) for line in block.splitlines()
                            if line.strip().endswith(("cuLaunchKernel", "cuLaunchKernelEx")))
                    launches[w] = round(n) or launches[w]
        print(f"{folder}:")
        full(rows, launches)
        follow(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
