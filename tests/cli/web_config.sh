#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The `web:` section as the binary reports it: TLS settings and non-bcrypt hashes are
# configuration errors (exit 2) with a message that says what to do. Usage: web_config.sh NEUTRACERD
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
expect() { # expect CODE PATTERN FILE
  local output status
  output=$("$bin" --check-config --config "$3" 2>&1)
  status=$?
  if [ "$status" -ne "$1" ] || ! grep -qE -- "$2" <<<"$output"; then
    echo "FAIL: $(basename "$3") -> exit $status (want $1), output: $output"
    failures=$((failures + 1))
  else
    echo "ok: $(basename "$3") -> $1"
  fi
}
printf 'web:\n  tls_cert_file: /etc/neutracerd/server.crt\n  tls_key_file: /etc/neutracerd/server.key\n' >"$dir/tls.yaml"
printf 'web:\n  tls_server_config: {cert_file: a.crt, key_file: a.key}\n' >"$dir/toolkit-tls.yaml"
printf 'web:\n  basic_auth_users:\n    alice: "$apr1$abcdefgh$0123456789abcdefghijkl"\n' >"$dir/md5.yaml"
printf 'web:\n  basic_auth_users:\n    alice: hunter2-plaintext\n' >"$dir/plain.yaml"
printf 'web:\n  max_concurrent_requests: 0\n' >"$dir/zero.yaml"
printf 'web:\n  max_concurrent_requests: 32\n  max_connections: 16\n' >"$dir/few-connections.yaml"
printf 'web:\n  max_concurrent_requests: 8\n  basic_auth_users:\n    alice: "$2y$05$abcdefghijklmnopqrstuuHNbAKRhpaujgo33bRWs.NLUTJO3lOy2"\n' >"$dir/good.yaml"

expect 2 'tls.yaml:2: web.tls_cert_file: TLS is not supported.*reverse proxy.*deploy/nginx/neutracerd.conf' "$dir/tls.yaml"
expect 2 'web.tls_server_config: TLS is not supported' "$dir/toolkit-tls.yaml"
expect 2 "user 'alice': the password hash has the Apache MD5 format, not bcrypt" "$dir/md5.yaml"
expect 2 "user 'alice': the password hash is not a bcrypt hash" "$dir/plain.yaml"
expect 2 'web.max_concurrent_requests.*between 1 and 64' "$dir/zero.yaml"
expect 2 'web.max_connections.*at least web.max_concurrent_requests \+ 8 \(40\)' "$dir/few-connections.yaml"
expect 0 'valid' "$dir/good.yaml"
# The plaintext never reaches the output.
if "$bin" --check-config --config "$dir/plain.yaml" 2>&1 | grep -q hunter2; then
  echo "FAIL: the error message repeats the configured value"
  failures=$((failures + 1))
fi
exit $((failures > 0))
