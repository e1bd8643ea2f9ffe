#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds neutracerd and its tests into ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" \
  -DNEUTRACER_WERROR="${NEUTRACER_WERROR:-OFF}" >/dev/null
cmake --build build -j "$(nproc)"
