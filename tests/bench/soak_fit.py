#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summary and growth fit of a tests/bench/soak.sh CSV.

  soak_fit.py CSV [SLOPE_MAX_KIB_MIN]   (default 64)

Least squares line through VmRSS over the second half of the samples: slope in KiB/min, and
the growth. Prints a line starting with FAIL for each failed check: the slope above the
limit; the minimum of open fds or threads over the second half above the first half's
(its first 2 samples left out) by more than 16 fds / 4 threads. Also fits the second half's
"quiet" samples alone (threads at the run's minimum: no probe removal in progress, whose
threads and their heaps add about 1 MiB for a while); information only.
"""
import csv
import sys


def fit(t, y):
    n = len(t)
    mt, my = sum(t) / n, sum(y) / n
    sxx = sum((a - mt) ** 2 for a in t)
    return sum((a - mt) * (b - my) for a, b in zip(t, y)) / sxx if sxx else 0.0


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    limit = float(sys.argv[2]) if len(sys.argv) > 2 else 64.0

    def col(name, rs):
        return [float(r[name]) for r in rs if r.get(name) not in ("", "-", None)]

    first, half = rows[:len(rows) // 2], rows[len(rows) // 2:]
    t = [float(r["t_s"]) / 60 for r in half]
    y = col("rss_kib", half)
    slope = fit(t, y)
    rss = col("rss_kib", rows)
    print(f"samples {len(rows)}; fit over the second half: {len(t)} samples, "
          f"t = {t[0]:.1f}..{t[-1]:.1f} min")
    print(f"RSS KiB: first {rss[0]:.0f}, min {min(rss):.0f}, max {max(rss):.0f}, last {rss[-1]:.0f}; "
          f"growth first->last {rss[-1] - rss[0]:+.0f}, over the second half {y[-1] - y[0]:+.0f}")
    print(f"RSS slope (second half): {slope:+.1f} KiB/min (limit {limit:.0f})")
    floor = min(col("threads", rows))
    quiet = [r for r in half if float(r["threads"]) == floor]
    if len(quiet) >= 2:
        qt = [float(r["t_s"]) / 60 for r in quiet]
        qy = col("rss_kib", quiet)
        print(f"RSS slope over the second half's quiet samples ({len(quiet)} with {floor:.0f} threads): "
              f"{fit(qt, qy):+.1f} KiB/min, {qy[0]:.0f} -> {qy[-1]:.0f} KiB")
    # fds and threads jump while probes are attached or removed (one link fd per probe, one
    # thread per link during removal), for other processes' driver files too: compare floors.
    warm = first[2:] or first
    for name, margin in (("fds", 16), ("threads", 4)):
        a, b = col(name, warm), col(name, half)
        print(f"{name}: first half (after 2 samples) {min(a):.0f}..{max(a):.0f}, "
              f"second half {min(b):.0f}..{max(b):.0f}")
        if min(b) > min(a) + margin:
            print(f"FAIL: {name}: second half's minimum above the first half's minimum + {margin}")
    cpu, ts = col("cpu_s", rows), col("t_s", rows)
    print(f"daemon CPU: {100 * (cpu[-1] - cpu[0]) / (ts[-1] - ts[0]):.1f} % of one core on average")
    for m in ("launches", "inflight", "thread_contexts", "traced_tgids", "os_counters",
              "os_threads", "os_io_inflight", "os_sockets"):
        e = [int(v) for v in col(m, rows)]
        if not e:
            continue
        msg = f"map {m}: entries {min(e)}..{max(e)}, last {e[-1]}"
        d = [int(v) for v in col(m + "_dead", rows)]
        if d:
            msg += f"; entries of exited owners at a sample: max {max(d)}, last {d[-1]}"
        print(msg)
    p = col("cuda_processes", rows)
    print(f"CUDA processes tracked at a sample: {min(p):.0f}..{max(p):.0f}")
    ms = sorted(col("scrape_ms", rows))
    print(f"sample scrapes: median {ms[len(ms) // 2]:.1f} ms, max {ms[-1]:.1f} ms")
    if slope > limit:
        print(f"FAIL: RSS slope {slope:.1f} KiB/min above {limit:.0f}")


if __name__ == "__main__":
    main()
