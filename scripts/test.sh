#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs dependencies, builds, and runs the whole test suite. Run as root: the privileged
# tests load BPF programs and attach uprobes to a stand-in libcuda.so.1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
NEUTRACER_WERROR=ON scripts/build.sh # CI: warnings are errors
promtool check metrics < tests/fixtures/golden/cuda_metrics.prom
cd build
# Unit tests run in parallel; privileged ones are RUN_SERIAL (they share the kernel's uprobes).
ctest --output-on-failure -j "$(nproc)"
# libFuzzer targets under ASan and UBSan, 20 s each (two at a time on two CPUs): with the kept
# corpora that replays every known input and explores a little, and keeps the whole run under
# 30 minutes on a 2-CPU machine (31 min with 30 s each on 2026-11-28). FUZZ_SECONDS=60 or more
# for a longer search.
FUZZ_SECONDS=${FUZZ_SECONDS:-20} ../scripts/fuzz.sh
