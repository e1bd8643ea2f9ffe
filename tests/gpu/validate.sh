#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# GPU validation of neutracerd against workloads with exact ground truth.
#
# Usage (as root, from anywhere):
#   tests/gpu/validate.sh NEUTRACERD_BINARY OUTDIR [WORKLOAD...]
# Workloads (default: all, in this order): nvcc_static copies triton cublas torch_ops
#
# Environment:
#   PYTHON=python3            interpreter with torch/triton for the workloads
#   NT_PORT=19555             daemon port (127.0.0.1)
#   NT_CTX_BEFORE_READY=1     create the CUDA context before the daemon attaches
#   NT_TORCH_ALLOC_CONF=...   PYTORCH_CUDA_ALLOC_CONF for torch workloads
#                             (default expandable_segments:False)
# Exit status: 0 all rows match; 1 mismatch or workload failure; 2 setup error.
set -u -o pipefail

usage() { echo "usage: $0 NEUTRACERD_BINARY OUTDIR [WORKLOAD...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
BINARY=$1
OUTDIR=$2
shift 2
WORKLOADS=("$@")
[ ${#WORKLOADS[@]} -gt 0 ] || WORKLOADS=(nvcc_static copies triton cublas torch_ops)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python3}
PORT=${NT_PORT:-19555}
URL="http://127.0.0.1:${PORT}"

die() { echo "validate.sh: error: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (the daemon attaches uprobes)"
[ -x "$BINARY" ] || die "$BINARY is not an executable file"
command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found"
BINARY=$(cd "$(dirname "$BINARY")" && pwd)/$(basename "$BINARY")
mkdir -p "$OUTDIR" || die "cannot create $OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
rm -f "$OUTDIR"/*.metrics "$OUTDIR"/*.kernels.json "$OUTDIR"/*.truth.json "$OUTDIR"/*.run.json \
      "$OUTDIR"/results.md

# Shared libraries carried next to the binary.
BINDIR=$(dirname "$BINARY")
# Only the daemon gets the carried libraries: older copies must not shadow the workloads' own.
DAEMON_LIBS="${LD_LIBRARY_PATH:-}"
if [ -d "$BINDIR/lib" ]; then
  DAEMON_LIBS="$BINDIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "validate.sh: daemon LD_LIBRARY_PATH=$DAEMON_LIBS"
fi

fetch() { # fetch URL [OUTFILE]; curl if present, else Python urllib
  if command -v curl >/dev/null 2>&1; then
    if [ $# -ge 2 ]; then curl -fsS --max-time 5 -o "$2" "$1"; else curl -fsS --max-time 5 "$1"; fi
  else
    "$PYTHON" - "$@" <<'EOF'
import sys, urllib.request
body = urllib.request.urlopen(sys.argv[1], timeout=5).read()
if len(sys.argv) > 2:
    open(sys.argv[2], "wb").write(body)
else:
    sys.stdout.buffer.write(body)
EOF
  fi
}

if fetch "$URL/healthz" >/dev/null 2>&1; then
  die "something already listens on 127.0.0.1:$PORT (an old neutracerd?); stop it or set NT_PORT"
fi

{
  echo "date: $(date -Is)"
  echo "host: $(uname -a)"
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  command -v nvcc >/dev/null 2>&1 && nvcc --version | tail -n 2
  "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  "$PYTHON" -c 'import triton; print("triton", triton.__version__)' 2>&1
  echo "binary: $BINARY"
  LD_LIBRARY_PATH="$DAEMON_LIBS" "$BINARY" --version 2>&1
} > "$OUTDIR/environment.txt"
cat "$OUTDIR/environment.txt"

DAEMON_PID=""
cleanup() {
  if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
    kill -TERM "$DAEMON_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$DAEMON_PID" 2>/dev/null; then
      echo "validate.sh: daemon did not stop on SIGTERM; killing" >&2
      kill -KILL "$DAEMON_PID" 2>/dev/null
    fi
    wait "$DAEMON_PID" 2>/dev/null
  fi
  DAEMON_PID=""
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The rows compare launch counts with the truth: every launch counted (not the adaptive default).
echo "cuda: {launch_counting: exact}" > "$OUTDIR/daemon.yaml"
echo "validate.sh: starting $BINARY --config $OUTDIR/daemon.yaml --listen 127.0.0.1:$PORT --scan-interval 200ms"
LD_LIBRARY_PATH="$DAEMON_LIBS" "$BINARY" --config "$OUTDIR/daemon.yaml" --listen "127.0.0.1:$PORT" \
  --scan-interval 200ms --log-level info \
  > "$OUTDIR/daemon.log" 2>&1 &
DAEMON_PID=$!

ok=0
for _ in $(seq 600); do # 60 s
  kill -0 "$DAEMON_PID" 2>/dev/null || break
  if fetch "$URL/healthz" >/dev/null 2>&1; then ok=1; break; fi
  sleep 0.1
done
if [ $ok -ne 1 ]; then
  echo "validate.sh: daemon did not become healthy within 60 s; daemon.log:" >&2
  tail -n 30 "$OUTDIR/daemon.log" >&2
  exit 2
fi
echo "validate.sh: daemon is up (pid $DAEMON_PID)"

status=0
for workload in "${WORKLOADS[@]}"; do
  echo "validate.sh: ===== $workload ====="
  if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
    echo "validate.sh: daemon died; daemon.log:" >&2
    tail -n 30 "$OUTDIR/daemon.log" >&2
    status=1
    break
  fi
  "$PYTHON" "$HERE/orchestrate.py" --workload "$workload" --outdir "$OUTDIR" --url "$URL" \
    --python "$PYTHON" || status=1
done

fetch "$URL/metrics" "$OUTDIR/final.metrics" || echo "validate.sh: final scrape failed" >&2
kill -0 "$DAEMON_PID" 2>/dev/null || { echo "validate.sh: daemon is not running at the end" >&2; status=1; }
cleanup

echo "validate.sh: ===== results ====="
"$PYTHON" "$HERE/compare.py" "$OUTDIR" "${WORKLOADS[@]}" || status=1
echo "validate.sh: outputs in $OUTDIR (results.md, daemon.log, *.metrics, *.kernels.json, *.truth.json, *.stderr)"
exit $status
