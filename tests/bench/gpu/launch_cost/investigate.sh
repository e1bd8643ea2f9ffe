#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Runs investigate.py on the GPU machine (as root, from the repository root), results in $OUT.
# Everything it needs is in this folder (carried): neutracerd + lib/, symhits, progstats,
# libntnoop.so, noop_loop, the Python scripts; launch_loop.cu is built there with nvcc.
#   bash tests/bench/gpu/launch_cost/investigate.sh [LIMIT_S [investigate.py options]]
#       LIMIT_S: default 450 s, a hard limit (partial results are kept). Default options:
#       --rounds 5 (the full plan). The follow-up run used: 200 --plan followup --rounds 16
set -u
OUT=${OUT:-/tmp/ntdiag-out}
LIMIT=${1:-450}
shift $(( $# > 0 ? 1 : 0 ))
[ $# -gt 0 ] || set -- --rounds 5
mkdir -p "$OUT"
cd "$(dirname "$0")" || exit 2
[ "$(id -u)" = 0 ] || { echo "investigate.sh: needs root" >&2; exit 2; }
chmod +x neutracerd symhits progstats noop_loop 2>/dev/null
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
PY=$(command -v python3)
echo "python3: $PY; objdump: $(command -v objdump); nvcc: $(command -v nvcc || echo /usr/local/cuda/bin/nvcc?)"
timeout -k 15 $((LIMIT + 20)) "$PY" investigate.py "$OUT" --limit-s "$LIMIT" "$@"
rc=$?
echo "investigate.py exit $rc"
ls -la "$OUT"
exit $rc
