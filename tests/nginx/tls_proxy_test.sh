#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The reverse-proxy recipe deploy/nginx/neutracerd.conf, for real: Debian's nginx with a
# self-signed certificate terminates TLS in front of a running neutracerd, and curl scrapes
# /metrics through it; then the recipe's optional client certificates and basic auth, and
# neutracerd's own basic auth behind nginx. Needs root (neutracerd loads BPF programs).
# Usage: tls_proxy_test.sh NEUTRACERD RECIPE
set -u
daemon=$1
recipe=$2
nginx=/usr/sbin/nginx
dir=$(mktemp -d)
daemon_pid=
nginx_pid_file=
failures=0

cleanup() {
  [ -n "$nginx_pid_file" ] && [ -s "$nginx_pid_file" ] && kill "$(cat "$nginx_pid_file")" 2>/dev/null
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
pass() { echo "ok: $*"; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# expect_status NAME WANT CURL_ARGS...: curl's HTTP status must be WANT.
expect_status() {
  local name=$1 want=$2
  shift 2
  local got
  got=$(curl -s -o "$dir/body" -w '%{http_code}' --max-time 10 "$@")
  if [ "$got" = "$want" ]; then pass "$name -> $got"; else fail "$name -> $got (want $want): $(head -c 300 "$dir/body")"; fi
}

# ---- certificates: a CA for clients, a self-signed server certificate for 127.0.0.1 ----------
# The proc root holds one process with no mappings: a /proc tree (the daemon checks for a pid
# directory with its own stat) with nothing to trace.
mkdir -p "$dir/tls" "$dir/proc/1" "$dir/tmp"
printf '1 (init) S 0 1 1 0 -1 4194560\n' > "$dir/proc/1/stat"
: > "$dir/proc/1/maps"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=neutracerd-test \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$dir/tls/server.key" -out "$dir/tls/server.crt" \
  2>/dev/null || { echo "FAIL: openssl could not make the server certificate"; exit 1; }
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=test-clients-ca \
  -keyout "$dir/tls/clients-ca.key" -out "$dir/tls/clients-ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=prometheus -keyout "$dir/tls/client.key" \
  -out "$dir/tls/client.csr" 2>/dev/null
openssl x509 -req -days 2 -in "$dir/tls/client.csr" -CA "$dir/tls/clients-ca.crt" \
  -CAkey "$dir/tls/clients-ca.key" -CAcreateserial -out "$dir/tls/client.crt" 2>/dev/null
# nginx workers run as nobody and read the htpasswd file per request.
chmod 755 "$dir"
chown nobody "$dir/tmp"

# ---- the daemon, on a loopback port, tracing nothing (a proc root without CUDA processes) -----
daemon_port=$(free_port)
# Basic auth in neutracerd itself for the last check: user "prometheus", password "scrape".
daemon_hash=$(python3 -W ignore -c 'import crypt; print(crypt.crypt("scrape", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 5)))')
printf 'alerts: {journal: false}\n' > "$dir/open.yaml"
printf 'alerts: {journal: false}\nweb:\n  basic_auth_users:\n    prometheus: "%s"\n' "$daemon_hash" > "$dir/auth.yaml"

start_daemon() { # start_daemon CONFIG
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  "$daemon" --config "$1" --listen "127.0.0.1:$daemon_port" --proc-root "$dir/proc" \
    --log-level warn >>"$dir/daemon.log" 2>&1 &
  daemon_pid=$!
  for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$daemon_port/healthz" && return 0
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL: neutracerd did not start:"
  cat "$dir/daemon.log"
  exit 1
}

# ---- nginx with the recipe, paths and ports substituted --------------------------------------
tls_port=$(free_port)

# substitute FROM TO FILE: replaces every FROM and fails when there is none (the recipe drifted).
substitute() {
  if ! grep -qF -- "$1" "$3"; then
    fail "recipe no longer contains '$1'"
    return
  fi
  python3 -c 'import sys; p = sys.argv[3]; t = open(p).read(); open(p, "w").write(t.replace(sys.argv[1], sys.argv[2]))' "$1" "$2" "$3"
}

start_nginx() { # start_nginx VARIANT [UNCOMMENT_PREFIX...]
  local variant=$1
  shift
  local conf="$dir/$variant"
  mkdir -p "$conf"
  cp "$recipe" "$conf/neutracerd.conf"
  substitute "127.0.0.1:10492" "127.0.0.1:$daemon_port" "$conf/neutracerd.conf"
  substitute "listen 10493 ssl;" "listen 127.0.0.1:$tls_port ssl;" "$conf/neutracerd.conf"
  substitute "/etc/neutracerd/" "$dir/" "$conf/neutracerd.conf"
  local line
  for line in "$@"; do
    substitute "#$line" "$line" "$conf/neutracerd.conf"
  done
  cat >"$conf/nginx.conf" <<CONF
pid $conf/nginx.pid;
error_log $conf/error.log;
worker_processes 1;
events { worker_connections 64; }
http {
  access_log $conf/access.log;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  include $conf/neutracerd.conf;
}
CONF
  [ -n "$nginx_pid_file" ] && [ -s "$nginx_pid_file" ] && kill "$(cat "$nginx_pid_file")" 2>/dev/null && sleep 0.5
  nginx_pid_file="$conf/nginx.pid"
  if ! "$nginx" -t -q -c "$conf/nginx.conf" 2>"$conf/test.log"; then
    fail "nginx -t rejects the $variant recipe: $(cat "$conf/test.log")"
    return 1
  fi
  "$nginx" -c "$conf/nginx.conf" || { fail "nginx did not start ($variant)"; return 1; }
  for _ in $(seq 50); do
    curl -s -o /dev/null --cacert "$dir/tls/server.crt" "https://127.0.0.1:$tls_port/healthz" && return 0
    sleep 0.1
  done
  fail "nginx ($variant) never answered"
  return 1
}

url="https://127.0.0.1:$tls_port"
tls=(--cacert "$dir/tls/server.crt")

# 1. TLS termination: /metrics through nginx is the daemon's exposition.
start_daemon "$dir/open.yaml"
if start_nginx plain; then
  expect_status "TLS GET /metrics" 200 "${tls[@]}" "$url/metrics"
  if grep -q '^neutracer_build_info{' "$dir/body" &&
    grep -q '^neutracer_http_requests_rejected_total{reason="unauthorized"} 0' "$dir/body"; then
    pass "the body is neutracerd's exposition"
  else
    fail "unexpected /metrics body: $(head -c 300 "$dir/body")"
  fi
  expect_status "TLS GET /healthz" 200 "${tls[@]}" "$url/healthz"
  expect_status "POST refused at nginx" 403 "${tls[@]}" -X POST -d x "$url/metrics"
  # The certificate is verified: without the CA curl refuses (000: no HTTP exchange).
  expect_status "unverified certificate refused" 000 "$url/metrics"
  expect_status "plain HTTP to the TLS port" 400 "http://127.0.0.1:$tls_port/metrics"
fi

# 2. Client certificates: none -> 400 from nginx, the CA's client certificate -> 200.
if start_nginx mutual "ssl_client_certificate" "ssl_verify_client"; then
  expect_status "mTLS without a client certificate" 400 "${tls[@]}" "$url/metrics"
  expect_status "mTLS with a client certificate" 200 "${tls[@]}" --cert "$dir/tls/client.crt" \
    --key "$dir/tls/client.key" "$url/metrics"
fi

# 3. Basic auth at nginx with a bcrypt htpasswd line; /healthz stays open.
python3 -W ignore -c 'import crypt; print("prometheus:" + crypt.crypt("nginx-pw", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 5)))' >"$dir/nginx.htpasswd"
chmod 644 "$dir/nginx.htpasswd"
if start_nginx basic "auth_basic " "auth_basic_user_file"; then
  expect_status "nginx basic auth, no password" 401 "${tls[@]}" "$url/metrics"
  expect_status "nginx basic auth, wrong password" 401 "${tls[@]}" -u prometheus:nope "$url/metrics"
  expect_status "nginx basic auth, right password" 200 "${tls[@]}" -u prometheus:nginx-pw "$url/metrics"
  expect_status "nginx basic auth, /healthz open" 200 "${tls[@]}" "$url/healthz"
fi

# 4. neutracerd's own basic auth behind the TLS proxy.
start_daemon "$dir/auth.yaml"
if start_nginx daemon-auth; then
  expect_status "daemon basic auth, no password" 401 "${tls[@]}" "$url/metrics"
  if grep -qi '^www-authenticate: Basic realm="neutracerd"' <(curl -s -D - -o /dev/null "${tls[@]}" "$url/metrics" | tr -d '\r'); then
    pass "the 401 carries WWW-Authenticate: Basic realm=\"neutracerd\""
  else
    fail "no WWW-Authenticate challenge on the daemon's 401"
  fi
  expect_status "daemon basic auth, right password" 200 "${tls[@]}" -u prometheus:scrape "$url/metrics"
  grep -q '^neutracer_http_requests_rejected_total{reason="unauthorized"} [1-9]' "$dir/body" &&
    pass "the refusal was counted" || fail "unauthorized refusal not counted: $(grep rejected "$dir/body")"
  expect_status "daemon basic auth, /healthz open" 200 "${tls[@]}" "$url/healthz"
fi

if ! kill -0 "$daemon_pid" 2>/dev/null; then
  fail "neutracerd died: $(cat "$dir/daemon.log")"
fi
exit $((failures > 0))
