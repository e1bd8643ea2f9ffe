#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs dependencies, builds, and runs neutracerd in the foreground with its defaults
# (metrics on http://127.0.0.1:10492/metrics). Run as root. Extra arguments go to neutracerd.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
exec build/neutracerd "$@"
