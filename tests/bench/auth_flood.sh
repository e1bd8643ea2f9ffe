#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Whether a valid scraper whose credentials are not cached gets in while a password-guessing
# flood runs (issue 33). Run as root from the repo root after scripts/build.sh:
#   tests/bench/auth_flood.sh [BUILD_DIR] [SECONDS]          (defaults: build, 20)
# For each flood of 8 and 16 threads, against a freshly started daemon (empty credential cache)
# with basic auth at bcrypt cost 10, flood and scraper both on 127.0.0.1 and the flood using the
# valid user name (the worst case: nothing tells them apart before bcrypt):
#   warm: 40 scrapes with one user (the first one uncached, then from the cache);
#   cold: 40 scrapes cycling through 17 users, one more than the cache holds: every one uncached.
# Prints each run's share of scrapes answered 200 within 1 s and the daemon's refusal counters.
set -euo pipefail
BUILD=${1:-build}
SECONDS_PER_FLOOD=${2:-20}
PORT=${PORT:-19633}
here=$(cd "$(dirname "$0")" && pwd)
[ "$(id -u)" = 0 ] || { echo "run as root (the daemon loads BPF programs)" >&2; exit 1; }
dir=$(mktemp -d)
daemon=
cleanup() {
  [ -n "$daemon" ] && kill -TERM "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

# A proc root with one process and no mappings: nothing to trace, so the scrapes are cheap and
# the measurement is the password checks'.
mkdir -p "$dir/proc/1"
printf '1 (init) S 0 1 1 0 -1 4194560\n' > "$dir/proc/1/stat"
: > "$dir/proc/1/maps"
users=17
python3 -W ignore - "$users" > "$dir/auth.yaml" <<'PY'
import crypt, sys
print("alerts: {journal: false}\nweb:\n  basic_auth_users:")
for i in range(int(sys.argv[1])):
    print(f'    scraper{i}: "{crypt.crypt(f"secret-{i}", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))}"')
PY
echo "bcrypt cost 10 on this machine: $(python3 -W ignore -c '
import crypt, time
h = crypt.crypt("x", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10))
t = time.monotonic()
for _ in range(10): crypt.crypt("y", h)
print(f"{(time.monotonic() - t) * 100:.0f} ms per check")')"

start_daemon() {
  "$BUILD/neutracerd" --config "$dir/auth.yaml" --listen "127.0.0.1:$PORT" \
    --proc-root "$dir/proc" --log-level warn >>"$dir/daemon.log" 2>&1 &
  daemon=$!
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$PORT/healthz" && return 0
    sleep 0.1
  done
  echo "neutracerd did not start:" >&2
  cat "$dir/daemon.log" >&2
  exit 1
}
stop_daemon() {
  kill -TERM "$daemon"
  wait "$daemon" 2>/dev/null || true
  daemon=
}

interval=$(python3 -c "print($SECONDS_PER_FLOOD / 40)")
for threads in 8 16; do
  for mode in warm cold; do
    if [ "$mode" = warm ]; then
      credentials=scraper0:secret-0
    else
      credentials=$(seq -s, -f 'scraper%g' 0 $((users - 1)) | sed -E 's/scraper([0-9]+)/scraper\1:secret-\1/g')
    fi
    start_daemon
    python3 "$here/auth_flood.py" flood "$PORT" "$threads" $((SECONDS_PER_FLOOD + 2)) scraper0 \
      >"$dir/flood.out" &
    flood=$!
    sleep 1 # the flood fills the queue first
    result=$(python3 "$here/auth_flood.py" scrape "$PORT" 40 "$interval" "$credentials" | tail -1)
    wait "$flood"
    healthz=$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$PORT/healthz")
    rejected=$(curl -s -u scraper0:secret-0 "http://127.0.0.1:$PORT/metrics" |
      grep '^neutracer_http_requests_rejected_total' | sed -E 's/.*reason="([a-z_]+)"\} /\1=/' |
      tr '\n' ' ')
    echo "threads=$threads mode=$mode $result | $(cat "$dir/flood.out") | healthz $healthz | rejected $rejected"
    stop_daemon
  done
done
