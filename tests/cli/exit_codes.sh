#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The binary's flags and exit codes, as a user and systemd see them. Usage: exit_codes.sh NEUTRACERD
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
expect() { # expect CODE PATTERN -- ARGS...
  local code=$1 pattern=$2
  shift 3
  local output status
  # A bound, so a hang (a FIFO as the config once was one) fails instead of stalling ctest.
  output=$(timeout 20 "$bin" "$@" 2>&1)
  status=$?
  if [ "$status" -ne "$code" ] || ! grep -qE -- "$pattern" <<<"$output"; then
    echo "FAIL: neutracerd $* -> exit $status (want $code), output: $output"
    failures=$((failures + 1))
  else
    echo "ok: neutracerd $* -> $code"
  fi
}
printf 'listen: "127.0.0.1:10492"\nscan_interval: 2s\n' > "$dir/good.yaml"
printf 'listen: [\n' > "$dir/broken.yaml"
printf 'listn: "127.0.0.1:1"\n' > "$dir/unknown.yaml"
printf 'cuda:\n  max_kernels_per_process: lots\n' > "$dir/type.yaml"
printf 'scan_interval: 10ms\n' > "$dir/range.yaml"
mkfifo "$dir/fifo.yaml"
printf 'proc_root: /nonexistent\n' > "$dir/no_proc.yaml"
head -c 1048577 /dev/zero | tr '\0' '#' > "$dir/huge.yaml"

expect 0 '^neutracerd [0-9]+\.[0-9]+\.[0-9]+$' -- --version
expect 0 '--scan-interval' -- --help
expect 0 'valid' -- --check-config --config "$dir/good.yaml"
# Valid, with a warning: a straggler window of three scans never names anyone.
expect 0 'warning: nccl.straggler_window \(30s\) holds fewer than 4 scans' -- --check-config --config "$dir/good.yaml" --scan-interval 10s
expect 2 'broken.yaml:[0-9]+' -- --check-config --config "$dir/broken.yaml"
expect 2 "listn" -- --check-config --config "$dir/unknown.yaml"
expect 2 'max_kernels_per_process' -- --check-config --config "$dir/type.yaml"
expect 2 'scan_interval' -- --check-config --config "$dir/range.yaml"
expect 2 'missing.yaml' -- --check-config --config "$dir/missing.yaml"
expect 2 'fifo.yaml: cannot read config file: is a FIFO' -- --check-config --config "$dir/fifo.yaml"
expect 2 'huge.yaml: cannot read config file: file is larger than' -- --check-config --config "$dir/huge.yaml"
expect 2 'needs brackets' -- --check-config --config "$dir/good.yaml" --listen '::1:80'
expect 2 'no IPv6 support' -- --check-config --config "$dir/good.yaml" --web.listen-address '[::1]:80'
expect 2 "proc_root: invalid value '/nonexistent': does not exist" -- --check-config --config "$dir/no_proc.yaml"
expect 2 "--proc-root: invalid value '$dir': holds no process directories" -- --check-config --config "$dir/good.yaml" --proc-root "$dir"
# A folder with a digit-named subfolder is not a process tree either (issue 33).
mkdir -p "$dir/not_proc/1"
expect 2 "--proc-root: invalid value '$dir/not_proc': holds no process directory with its own stat" -- --check-config --config "$dir/good.yaml" --proc-root "$dir/not_proc"
expect 2 'no-such-flag' -- --no-such-flag
expect 2 'scan-interval' -- --check-config --scan-interval soon
exit $((failures > 0))
