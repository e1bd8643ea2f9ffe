#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Our Prometheus text writer (exposition/) against prometheus-cpp's TextSerializer (issue 19,
# item 5: why the daemon has its own). Run from the repo root, as any user:
#   tests/bench/exposition_compare.sh [PROCS] [ROUNDS]
# (defaults 1000, 7; env: CXX=g++, KEEP=1 keeps the work directory, SCRAPE=0 skips the
#  Prometheus server step)
#
# Needs Debian's prometheus-cpp (`apt-get install prometheus-cpp-dev`, 1.0.1 on Debian 12). It is
# for this comparison only: neither the daemon nor CI's tests build or link it, and this script
# stops with a message when it is missing. promtool and prometheus come with the `prometheus`
# package (scripts/install-deps.sh installs it); without them those steps are skipped.
#
# 1. Compiles tests/bench/exposition_compare.cpp with exposition/*.cpp and prometheus-cpp-core
#    (-O2, as the daemon's RelWithDebInfo build; -Wall -Wextra -Werror).
# 2. Edge cases: one small file per case and writer (HELP with a newline; HELP with a backslash;
#    a label value with bytes that are not UTF-8; a label value with a quote, a newline and a
#    backslash; assorted values), each shown with `sed -n l` (a raw line break ends a line with
#    `$`, escapes appear doubled, other bytes in octal) and checked by `promtool check metrics`.
# 3. Timings: PROCS processes × 124 series (the daemon's CUDA and OS families and labels: pid,
#    comm, and for half of them container, namespace, pod; 12 kernels, two histograms), ROUNDS
#    rounds, median (min–max), ns per series, bytes, peak extra heap (exposition_compare.cpp says
#    what each row times). The last round's outputs go through promtool and are compared series
#    by series (le compared as numbers, values as doubles).
# 4. Unless SCRAPE=0: a Prometheus server (the `prometheus` binary, on loopback ports) scrapes
#    each writer's edge-case files, each behind one good series, as separate jobs; shows each
#    target's health and last error and whether the good series of that scrape was stored.
# Takes under a minute on 2 vCPUs (compiling is ~15 s of it).
set -euo pipefail
PROCS=${1:-1000}
ROUNDS=${2:-7}
CXX=${CXX:-g++}
SCRAPE=${SCRAPE:-1}
cd "$(dirname "$0")/../.."

if ! pkg-config --exists prometheus-cpp-core 2>/dev/null; then
  echo "prometheus-cpp is not installed: apt-get install prometheus-cpp-dev (Debian 12: 1.0.1)." >&2
  echo "It is needed by this comparison only, never by the daemon or its tests." >&2
  exit 1
fi
command -v python3 >/dev/null || { echo "python3 is needed to compare the outputs" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

echo "== machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
echo "== prometheus-cpp $(pkg-config --modversion prometheus-cpp-core) (package $(dpkg-query -W -f='${Package} ${Version}' prometheus-cpp-dev 2>/dev/null || echo '?')), $($CXX --version | head -1)"
command -v promtool >/dev/null && echo "== $(promtool --version 2>&1 | head -1)"

echo "== compiling"
# shellcheck disable=SC2046 # pkg-config's flags are separate words
$CXX -std=c++20 -O2 -Wall -Wextra -Werror -I. tests/bench/exposition_compare.cpp \
  exposition/exposition.cpp exposition/metric_sink.cpp exposition/text_sink.cpp \
  exposition/utf8_repair.cpp \
  $(pkg-config --cflags --libs prometheus-cpp-core) -o "$work/exposition_compare"

promtool_verdict() { # FILE -> "accepted" or promtool's error
  local err
  if err=$(promtool check metrics <"$1" 2>&1); then echo "accepted"; else echo "REJECTED: ${err//$'\n'/ }"; fi
}

echo
printf '%s\n' "== edge cases (sed -n l: '\$' ends a line; a backslash shows as '\\\\'; other bytes in octal)"
mkdir -p "$work/cases"
"$work/exposition_compare" cases "$work/cases"
for c in help_newline help_backslash label_invalid_utf8 label_quote_newline_backslash values; do
  for w in ours prometheus-cpp; do
    f=$work/cases/${w}_$c.prom
    echo "-- $c, $w:"
    grep -av '^# TYPE' "$f" | sed -n l | sed 's/^/     /'
    if command -v promtool >/dev/null; then echo "   promtool: $(promtool_verdict "$f")"; fi
  done
done

echo
echo "== timings: $PROCS processes, $ROUNDS rounds"
mkdir -p "$work/bench"
"$work/exposition_compare" bench "$PROCS" "$ROUNDS" "$work/bench"

echo
echo "== the last round's outputs"
for f in ours_bench prometheus-cpp_bench prometheus-cpp-registry_bench; do
  if command -v promtool >/dev/null; then
    echo "promtool check metrics, $f.prom ($(stat -c %s "$work/bench/$f.prom") bytes): $(promtool_verdict "$work/bench/$f.prom")"
  fi
done
python3 - "$work/bench/ours_bench.prom" "$work/bench/prometheus-cpp_bench.prom" \
  "$work/bench/prometheus-cpp-registry_bench.prom" <<'EOF'
import re, sys
line_re = re.compile(r'([^{ ]+)(?:\{(.*)\})? (\S+)$')
label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
def load(path):
    series = {}
    for line in open(path, encoding='utf-8'):
        if line.startswith('#'):
            continue
        name, labels, value = line_re.match(line.rstrip('\n')).groups()
        key = tuple(sorted((k, repr(float(v)) if k == 'le' else v)
                           for k, v in label_re.findall(labels or '')))
        series[(name, key)] = float(value)
    return series
ours = load(sys.argv[1])
for path, what in ((sys.argv[2], 'prometheus-cpp'), (sys.argv[3], 'prometheus-cpp registry')):
    theirs = load(path)
    differ = [k for k in ours if k in theirs and ours[k] != theirs[k]]
    print(f'{what} against ours: {len(theirs)} series, {len(set(ours) ^ set(theirs))} not in both '
          f'(le compared as numbers), {len(differ)} values differ as doubles', end='')
    print(f', e.g. {ours[differ[0]]!r} written as {theirs[differ[0]]!r}' if differ else '')
EOF
grep -o 'le="[^"]*"' "$work/bench/ours_bench.prom" | sort -u >"$work/le_ours"
grep -o 'le="[^"]*"' "$work/bench/prometheus-cpp_bench.prom" | sort -u >"$work/le_prom"
echo "le values written differently (ours | prometheus-cpp): $(diff "$work/le_ours" "$work/le_prom" | grep -c '^<') of $(wc -l <"$work/le_ours"):" \
  "$(paste -d'|' <(diff "$work/le_ours" "$work/le_prom" | grep '^<' | cut -c3-) <(diff "$work/le_ours" "$work/le_prom" | grep '^>' | cut -c3-) | tr '\n' ' ')"

if [ "$SCRAPE" = 1 ] && command -v prometheus >/dev/null; then
  echo
  echo "== a Prometheus server scraping the edge cases (each file behind one good series)"
  mkdir -p "$work/www" "$work/tsdb"
  read -r http_port prom_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
  printf 'global: {scrape_interval: 1s, scrape_timeout: 1s}\nscrape_configs:\n' >"$work/prometheus.yml"
  for c in help_newline help_backslash label_invalid_utf8 label_quote_newline_backslash; do
    for w in ours prometheus-cpp; do
      { printf '# HELP good_gauge A good series.\n# TYPE good_gauge gauge\ngood_gauge 1\n'
        cat "$work/cases/${w}_$c.prom"; } >"$work/www/${w}_$c"
      printf '  - {job_name: "%s", metrics_path: "/%s", static_configs: [{targets: ["127.0.0.1:%s"]}]}\n' \
        "${w}_$c" "${w}_$c" "$http_port" >>"$work/prometheus.yml"
    done
  done
  python3 -m http.server "$http_port" --bind 127.0.0.1 --directory "$work/www" >/dev/null 2>&1 &
  pids+=($!)
  prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
  pids+=($!)
  api="http://127.0.0.1:$prom_port/api/v1"
  for _ in $(seq 30); do # until every target was scraped at least twice
    sleep 1
    curl -sf "$api/query?query=count(count_over_time(up%5B1m%5D)>=2)" 2>/dev/null |
      grep -q '"value":\[[0-9.]*,"8"\]' && break
  done
  python3 - "$api" <<'EOF'
import json, sys, urllib.request
api = sys.argv[1]
def get(path):
    return json.load(urllib.request.urlopen(api + path))['data']
stored = {r['metric']['job'] for r in get('/query?query=good_gauge')['result']}
print(f'{"job":44} {"health":7} good_gauge stored  last error')
for t in sorted(get('/targets')['activeTargets'], key=lambda t: t['labels']['job']):
    job = t['labels']['job']
    print(f'{job:44} {t["health"]:7} {"yes" if job in stored else "no":18} {t["lastError"]}')
EOF
fi
