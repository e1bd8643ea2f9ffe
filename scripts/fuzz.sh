#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets in tests/fuzz (clang, ASan + UBSan) and runs each for a bounded
# time from its seed corpus. Fails on any crash, sanitizer report, leak, timeout or broken
# invariant, and names the input that caused it.
#
#   scripts/fuzz.sh [--keep] [TARGET...]   e.g. scripts/fuzz.sh config_yaml proc_maps
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_JOBS      targets run at once (default: the number of CPUs)
#   FUZZ_BUILD_DIR build directory (default build-fuzz)
#   FUZZ_KEEP=1    same as --keep
#
# Each run starts from the corpus kept in the repository (tests/fuzz/corpus/<target>/) and
# then merges what it found into it with libFuzzer's -merge=1, in the work directory: only
# inputs that reach new coverage are added, and every reviewed seed stays. Without --keep the
# repository is left as it was (CI); the summary says how many inputs a run would add. To
# refresh the kept corpus, run e.g. `FUZZ_SECONDS=600 scripts/fuzz.sh --keep TARGET`, look at
# the new files under tests/fuzz/corpus/TARGET/ (named by their SHA-1) and commit them.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C # ls and comm agree on the order of corpus file names

keep=${FUZZ_KEEP:-0}
if [ "${1:-}" = --keep ]; then
  keep=1
  shift
fi

seconds=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-$(nproc)}
build=${FUZZ_BUILD_DIR:-build-fuzz}
# clang 16: clang 14 cannot capture structured bindings in lambdas (C++20), which the core uses.
cc=${FUZZ_CC:-clang-16}
cxx=${FUZZ_CXX:-clang++-16}

# Longest input per target: what the daemon could meet, kept small enough to fuzz quickly.
declare -A max_len=(
  [config_yaml]=16384 [proc_maps]=4096 [proc_stat]=1024 [proc_status]=4096 [proc_io]=1024
  [proc_cgroup]=4096 [cpu_list]=256 [http_request]=2048 [exposition]=2048
  [event_decoder]=16384 [kernel_names]=4096 [basic_auth]=1024
  # A stand-in driver library is ~2 KiB, the seeds 1-2 KiB; larger only slows mutation.
  [elf_symbols]=8192 [visible_gpus]=2048 [kubernetes_log_names]=512
  # /dev/kmsg records are at most about 8 KiB with their dictionary.
  [kmsg_xid]=8192
  # A CPython line table of a few hundred instructions, with the 13-byte header.
  [python_line_table]=4096
  # A Python process's memory around _PyRuntime: one thread, a few frames and code objects.
  [python_frames]=8192
)

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for source in tests/fuzz/*_fuzzer.cpp; do
    name=$(basename "$source" _fuzzer.cpp)
    targets+=("$name")
  done
fi

CC=$cc CXX=$cxx cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNEUTRACER_FUZZ=ON \
  -DNEUTRACER_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/%/_fuzzer}"

work="$build/fuzz-run"
rm -rf "$work"
mkdir -p "$work"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Reports name functions and lines; clang-16's own symbolizer ships in llvm-16, not clang-16.
ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)}
export ASAN_SYMBOLIZER_PATH

run_target() {
  local name=$1
  # New inputs go into a copy, so the seed corpus in the repository stays as reviewed.
  mkdir -p "$work/$name.corpus"
  cp tests/fuzz/corpus/"$name"/* "$work/$name.corpus/"
  local status=0
  "$build/tests/fuzz/${name}_fuzzer" "$work/$name.corpus" \
    -max_total_time="$seconds" -max_len="${max_len[$name]:-4096}" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/$name-" \
    >"$work/$name.log" 2>&1 || status=$?
  echo "$status" >"$work/$name.status"
  [ "$status" = 0 ] || return 0
  # The kept corpus plus what this run found that adds coverage: a copy of the kept corpus is
  # the merge's output directory, so -merge=1 only adds to it.
  mkdir -p "$work/$name.merged"
  cp tests/fuzz/corpus/"$name"/* "$work/$name.merged/"
  "$build/tests/fuzz/${name}_fuzzer" -merge=1 "$work/$name.merged" "$work/$name.corpus" \
    -max_len="${max_len[$name]:-4096}" -timeout=10 -rss_limit_mb=2048 \
    >"$work/$name.merge.log" 2>&1 || echo "merge failed; see $work/$name.merge.log" \
    >"$work/$name.merge.error"
}

summary() {
  local name=$1 log=$work/$1.log
  local execs per_second coverage features
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  per_second=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  features=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  local added=0
  if [ -d "$work/$name.merged" ]; then
    added=$(comm -13 <(ls tests/fuzz/corpus/"$name") <(ls "$work/$name.merged") | wc -l)
  fi
  printf '%-20s %10s execs %8s execs/s  cov %6s  ft %6s  +%s corpus\n' "$name" "${execs:-?}" \
    "${per_second:-?}" "${coverage:-?}" "${features:-?}" "$added"
}

# With --keep, what the merge added goes into the repository's corpus.
keep_corpus() {
  local name=$1 file
  [ -d "$work/$name.merged" ] || return 0
  for file in $(comm -13 <(ls tests/fuzz/corpus/"$name") <(ls "$work/$name.merged")); do
    cp "$work/$name.merged/$file" tests/fuzz/corpus/"$name"/
  done
}

for name in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
    wait -n || true
  done
  run_target "$name" &
done
wait

failed=()
for name in "${targets[@]}"; do
  [ "$(cat "$work/$name.status" 2>/dev/null)" = 0 ] || failed+=("$name")
done

echo "fuzz: ${seconds}s per target; +N corpus: inputs with new coverage"
for name in "${targets[@]}"; do
  summary "$name"
  if [ -f "$work/$name.merge.error" ]; then
    echo "fuzz: $name: $(cat "$work/$name.merge.error")" >&2
  fi
done
if [ "$keep" = 1 ]; then
  for name in "${targets[@]}"; do
    keep_corpus "$name"
  done
  echo "fuzz: new inputs written to tests/fuzz/corpus/ (review, then commit)"
fi
for name in "${failed[@]}"; do
  echo "fuzz: $name FAILED; its log ($work/$name.log) ends:" >&2
  tail -40 "$work/$name.log" >&2
  ls "$work/$name"-* 2>/dev/null | sed 's/^/fuzz: input: /' >&2 || true
done
[ ${#failed[@]} -eq 0 ]
