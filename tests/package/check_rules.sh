#!/usr/bin/env bash
# The alert rules with another job selector (grafana/prometheus/generate-rules.py): with the
# default selector the generator reproduces neutracer-alerts.yml; with job="gpu-nodes" and a
# runbook elsewhere the rules pass promtool's checks and the same unit tests, run on series of
# job "gpu-nodes"; an unusable selector is refused; the shipped PrometheusRule
# (deploy/kubernetes/neutracerd-prometheusrule.yaml) is the generator's current output.
# Usage: check_rules.sh PROMTOOL SOURCE_DIR
set -euo pipefail
promtool=$1
source=$(realpath "$2")
rules=$source/grafana/prometheus
generate=$rules/generate-rules.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
if grep -n 'job="neutracerd"\|github.com/neutracerd' "$work/neutracer-alerts.yml"; then
  fail "generated rules still select job=\"neutracerd\" or link the default runbook (above)"
fi
grep -q 'runbook_url: https://wiki.example/neutracer/runbook#neutracercudamemoryleak$' \
  "$work/neutracer-alerts.yml" || fail "runbook_url not moved"
# The unit tests, on series and expected alerts of job "gpu-nodes".
sed -e 's/job="neutracerd"/job="gpu-nodes"/g' -e 's/\bjob: neutracerd$/job: gpu-nodes/' \
  -e 's/in job neutracerd for/in job gpu-nodes for/' \
  -e 's#https://github.com/neutracerd/neutracerd/blob/main/docs/runbook.md#https://wiki.example/neutracer/runbook#g' \
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

if "$generate" --prometheus-rule | cmp -s - "$source/deploy/kubernetes/neutracerd-prometheusrule.yaml"; then
  ok "deploy/kubernetes/neutracerd-prometheusrule.yaml is up to date"
else
  fail "deploy/kubernetes/neutracerd-prometheusrule.yaml is stale: regenerate it with" \
    "grafana/prometheus/generate-rules.py --prometheus-rule > deploy/kubernetes/neutracerd-prometheusrule.yaml"
fi

[ "$failures" -eq 0 ]
