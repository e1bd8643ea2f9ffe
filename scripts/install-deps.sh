#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what neutracerd needs to build and test, from Debian 12's archive. Run as root.
set -euo pipefail

packages=(
  build-essential cmake pkg-config clang bpftool
  libbpf-dev libelf-dev zlib1g-dev libcivetweb-dev libyaml-cpp-dev libspdlog-dev
  libsystemd-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev prometheus prometheus-alertmanager chromium fonts-dejavu-core python3
  libcrypt-dev libssl-dev nginx curl openssl
  # scripts/fuzz.sh (clang 14 cannot capture structured bindings), the .deb package and its
  # lintian check, exit-code tests
  clang-16 libclang-rt-16-dev dpkg-dev lintian libcap2-bin strace
  # <sys/sdt.h>: the stand-in libc10_cuda.so declares PyTorch's allocator tracepoints with it
  systemtap-sdt-dev
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}; run as root to install them" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# No service start during install: the prometheus package would otherwise try to start its server.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && created_policy=1
fi
trap '[ "$created_policy" = 1 ] && rm -f "$policy"' EXIT
apt-get install -y -qq --no-install-recommends "${missing[@]}"
