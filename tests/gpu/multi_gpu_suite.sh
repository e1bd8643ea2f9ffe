#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Per-GPU attribution on a two-GPU host (as root, from the repository root):
#   tests/gpu/multi_gpu_suite.sh NEUTRACERD_BINARY OUTDIR
# 1. multi_gpu.py: per-GPU memory, launches and copies against the workload's own figures;
# 2. BPF run counts and times of the launch and context probes (kernel.bpf_stats_enabled)
#    while PyTorch adds on one GPU, then alternates GPUs;
# 3. the raw-launch and eager benchmarks (--quick) and validate.sh copies torch_ops.
# Needs bpftool on PATH (or next to the binary) for step 2.
set -u
BINARY=$(readlink -f "$1")
OUT=$2
mkdir -p "$OUT"
BPFTOOL=$(command -v bpftool || echo "$(dirname "$BINARY")/bpftool")
LIBS=$(dirname "$BINARY")/lib
nvidia-smi -L > "$OUT/gpus.txt" 2>&1
timeout 240 python3 tests/gpu/multi_gpu.py "$BINARY" "$OUT/multi" > "$OUT/multi.txt" 2>&1
echo "multi_gpu.py exit $?" >> "$OUT/multi.txt"
sysctl -w kernel.bpf_stats_enabled=1 >/dev/null
LD_LIBRARY_PATH=$LIBS "$BINARY" --config /dev/null --listen 127.0.0.1:19558 > "$OUT/cost-daemon.log" 2>&1 &
DAEMON=$!
sleep 3
BPFTOOL=$BPFTOOL python3 - > "$OUT/cost.txt" 2>&1 <<'PY'
import os, subprocess, time
import torch
a = torch.zeros(1024, device="cuda:0"); b = torch.zeros(1024, device="cuda:1")
torch.cuda.synchronize(0); torch.cuda.synchronize(1)
time.sleep(3)  # discovered and attached
def runs():
    out = subprocess.run([os.environ["BPFTOOL"], "prog", "show"], capture_output=True,
                         text=True, env={**os.environ, "LD_LIBRARY_PATH": ""}).stdout
    found, name = {}, None
    for line in out.splitlines():
        words = line.split()
        if "name" in words:
            name = words[words.index("name") + 1]
            if "run_cnt" in words:
                found[name] = (int(words[words.index("run_time_ns") + 1]),
                               int(words[words.index("run_cnt") + 1]))
    return found
for label, alternate in (("one GPU", False), ("alternating GPUs", True)):
    before = runs(); t = time.time()
    for _ in range(20000):
        a.add_(1)
        if alternate:
            b.add_(1)
    torch.cuda.synchronize(0); torch.cuda.synchronize(1)
    us = (time.time() - t) / 20000 * 1e6
    after = runs()
    print(f"{label}: {us:.2f} us/iter")
    for prog in ("launch_handle_arg1", "context_set", "call_enter"):
        ns = after.get(prog, (0, 0))[0] - before.get(prog, (0, 0))[0]
        n = after.get(prog, (0, 0))[1] - before.get(prog, (0, 0))[1]
        print(f"  {prog}: {n} runs" + (f", {ns / n:.1f} ns each" if n else ""))
PY
kill -INT $DAEMON; wait $DAEMON
timeout 200 python3 tests/bench/gpu/run.py "$BINARY" "$OUT/bench" --quick --workloads raw,eager \
  --sections bench > "$OUT/bench.out" 2>&1
echo "bench exit $?" >> "$OUT/cost.txt"
timeout 150 tests/gpu/validate.sh "$BINARY" "$OUT/validate" copies torch_ops > "$OUT/validate.out" 2>&1
echo "validate exit $?" >> "$OUT/cost.txt"
