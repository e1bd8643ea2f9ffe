#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The alert rules with another job selector (grafana/prometheus/generate-rules.py): with the
# default selector and runbook (the packaged file:///usr/share/doc/neutracerd/runbook.md) the
# generator reproduces neutracer-alerts.yml; with job="gpu-nodes" and a runbook elsewhere the
# rules pass promtool's checks and the same unit tests, run on series of job "gpu-nodes"; the
# runbook can come from RUNBOOK_URL, --runbook-url overrides it; an unusable selector or runbook
# URL is refused; the shipped PrometheusRule (deploy/kubernetes/neutracerd-prometheusrule.yaml)
# is the generator's current output.
# Usage: check_rules.sh PROMTOOL SOURCE_DIR
set -euo pipefail
promtool=$1
source=$(realpath "$2")
rules=$source/grafana/prometheus
generate=$rules/generate-rules.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset RUNBOOK_URL # the defaults are checked below; an operator's setting must not leak in
default_runbook=file:///usr/share/doc/neutracerd/runbook.md
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
ok() { echo "ok: $*"; }

if "$generate" | cmp -s - "$rules/neutracer-alerts.yml"; then
  ok "default selector: neutracer-alerts.yml unchanged"
else
  fail "the generator with the default selector does not reproduce neutracer-alerts.yml"
fi

"$generate" --job-selector 'job="gpu-nodes"' --runbook-url https://wiki.example/neutracer/runbook \
  >"$work/neutracer-alerts.yml"
if grep -nF -e 'job="neutracerd"' -e "$default_runbook#" "$work/neutracer-alerts.yml"; then
  fail "generated rules still select job=\"neutracerd\" or link the default runbook (above)"
fi
grep -q 'runbook_url: https://wiki.example/neutracer/runbook#neutracercudamemoryleak$' \
  "$work/neutracer-alerts.yml" || fail "runbook_url not moved"
# The unit tests, on series and expected alerts of job "gpu-nodes".
sed -e 's/job="neutracerd"/job="gpu-nodes"/g' -e 's/\bjob: neutracerd$/job: gpu-nodes/' \
  -e 's/in job neutracerd for/in job gpu-nodes for/' \
  -e "s#$default_runbook#https://wiki.example/neutracer/runbook#g" \
  "$rules/neutracer-alerts_test.yml" >"$work/neutracer-alerts_test.yml"
grep -q 'neutracerd"' "$work/neutracer-alerts_test.yml" && fail "test file still names job neutracerd"
if "$promtool" check rules "$work/neutracer-alerts.yml" >"$work/check.log" 2>&1 &&
  (cd "$work" && "$promtool" test rules neutracer-alerts_test.yml) >"$work/test.log" 2>&1; then
  ok "job=\"gpu-nodes\": promtool check rules and the rules' unit tests pass"
else
  cat "$work/check.log" "$work/test.log" >&2
  fail "rules generated for job=\"gpu-nodes\" fail promtool (above)"
fi

"$generate" --job-selector 'job=~"neutracerd|gpu-nodes",cluster!="lab"' >"$work/regex.yml"
"$promtool" check rules "$work/regex.yml" >/dev/null || fail "regex selector: promtool check rules"
for bad in 'job=gpu' 'job="a" or 1' "job=\"it's\"" 'job="a # b"' ''; do
  if "$generate" --job-selector "$bad" >/dev/null 2>&1; then fail "selector '$bad' accepted"; fi
done
ok "a matcher list is accepted; unquoted, non-matcher and YAML-breaking selectors are refused"

# Every shipped alert links the packaged runbook; RUNBOOK_URL moves the links like --runbook-url,
# and the flag wins over the variable.
if grep 'runbook_url:' "$rules/neutracer-alerts.yml" |
  grep -vF "runbook_url: $default_runbook#"; then
  fail "shipped runbook_url not $default_runbook#<alert> (above)"
fi
RUNBOOK_URL=https://wiki.example/neutracer/runbook "$generate" --job-selector 'job="gpu-nodes"' |
  cmp -s - "$work/neutracer-alerts.yml" || fail "RUNBOOK_URL differs from --runbook-url"
RUNBOOK_URL=https://wiki.example/other "$generate" --runbook-url file:///srv/doc/runbook.md |
  grep 'runbook_url: file:///srv/doc/runbook.md#neutracergpulost$' >/dev/null ||
  fail "--runbook-url does not override RUNBOOK_URL"
for bad in 'ftp://example/runbook' 'https://a b' 'https://wiki.example/runbook#x' \
  "https://it's" 'file://host/runbook.md' 'runbook.md'; do
  if "$generate" --runbook-url "$bad" >/dev/null 2>&1; then fail "runbook URL '$bad' accepted"; fi
  if RUNBOOK_URL=$bad "$generate" >/dev/null 2>&1; then fail "RUNBOOK_URL='$bad' accepted"; fi
done
ok "runbook_url: the packaged runbook by default, RUNBOOK_URL or --runbook-url (which wins) elsewhere"

if "$generate" --prometheus-rule | cmp -s - "$source/deploy/kubernetes/neutracerd-prometheusrule.yaml"; then
  ok "deploy/kubernetes/neutracerd-prometheusrule.yaml is up to date"
else
  fail "deploy/kubernetes/neutracerd-prometheusrule.yaml is stale: regenerate it with" \
    "grafana/prometheus/generate-rules.py --prometheus-rule > deploy/kubernetes/neutracerd-prometheusrule.yaml"
fi

[ "$failures" -eq 0 ]
