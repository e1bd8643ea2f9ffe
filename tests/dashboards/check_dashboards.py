#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the neutracer Grafana dashboards (Python 3 standard library only).

Usage:
  check_dashboards.py DASHBOARD_DIR [--scrape FILE] [--extra-names FILE]
                                    [--promtool PATH] [--list-metrics]

Every DASHBOARD_DIR/*.json is checked against the conventions below; each violation is printed
as one line, "FILE: WHERE: WHAT", and the exit status is 1 when there is any (0 otherwise, 2 for
bad usage).

Dashboard:
  - valid JSON; "id" null or absent; a stable "uid" of 8-40 characters [A-Za-z0-9_-], unique in
    the directory; a title; "schemaVersion" >= 36; "editable": false; tags include "neutracer";
  - no "__inputs" and no ${DS_...} placeholders (file provisioning cannot resolve them);
  - a "dashboards" link with "asDropdown": true and the tag "neutracer" (cross-links).
Variables:
  - exactly one variable of type "datasource", named "datasource", with query "prometheus";
  - "job" and "instance" query variables: multi, includeAll, allValue ".+";
  - every query variable uses the datasource {"type":"prometheus","uid":"${datasource}"} and
    refresh 2 (on time range change);
  - "gpu", "namespace" and "pod" variables, where present: query variables, multi, includeAll,
    allValue ".*" (All must also match series without the label: processes outside Kubernetes).
Panels (rows included, collapsed rows' panels too):
  - a type, a gridPos inside the 24-column grid, a unique id, a title;
  - except rows: a non-empty description, the datasource {"type":"prometheus",
    "uid":"${datasource}"}, fieldConfig.defaults.unit set to a Grafana unit id, at least one
    target; units in overrides must be Grafana unit ids too;
  - no "renameByRegex" transformation (kernel names are shown as exported);
  - data links to another dashboard (/d/UID) must name a uid in the directory; links to
    neutracer-process must pass var-pid=${__field.labels.pid} (or ${__data.fields.pid});
  - links to the daemon's own pages (http://HOST/flame or /memory, dashboard links too) take
    HOST from the instance with the raw format (${instance:raw}, ${__field.labels.instance:raw},
    ${__data.fields.instance:raw}: Grafana percent-encodes link variables, and host:port would
    become host%3Aport) and pass pid= a variable.
Targets (and Prometheus annotation queries):
  - the datasource {"type":"prometheus","uid":"${datasource}"} and a non-empty expr;
  - every metric selector filters job=~"$job" and instance=~"$instance"; on a dashboard with a
    pid variable, every per-process selector (neutracer_cuda_* and neutracer_process_*, except
    the node-wide neutracer_cuda_processes, _exits_holding_memory_total and
    _memory_held_at_exit_bytes_total) also filters pid=~"$pid";
  - on a dashboard with a gpu variable, every selector of a family with a gpu label (the
    per-process memory, launch and copy families, neutracer_gpu_*,
    neutracer_nvml_process_memory_used_bytes) filters gpu=~"$gpu";
  - on a dashboard with namespace/pod variables, every per-process selector (and
    neutracer_container_info) filters namespace=~"$namespace" and pod=~"$pod", except in an
    expression that also selects an NVML family (neutracer_gpu_*, neutracer_nvml_*): a
    comparison with the whole device must not lose the other pods' share;
  - no gpu matcher on a family without a gpu label, and no namespace/pod matcher on a family
    without pod labels (choosing one GPU or pod would empty the panel);
  - every rate(), irate() and increase() has the range [$__rate_interval];
  - every counter (*_total) and histogram bucket (*_bucket) is inside rate(), irate() or
    increase();
  - time series targets have a legendFormat; grouping by kernel needs {{kernel}} in the legend,
    and no label_replace() on the kernel label; a legend or grouping that shows pid uses
    "{{comm}} ({{pid}})";
  - every metric is a neutracerd family (neutracer_*, process_*) or one of the series Prometheus
    adds itself (up, scrape_duration_seconds, ...).
Anywhere in the file: a "datasource" other than ${datasource} (the built-in Grafana annotation
excepted) is a violation.

Metric names: every metric selector in the PromQL of targets, annotations and query variables.
--list-metrics prints them (sorted, one per line) and exits 0 without checking.
--scrape FILE: a Prometheus text exposition captured from the daemon. Every referenced
  neutracer_*/process_* metric must be a family in it (its "# TYPE name type" lines); name_bucket,
  name_sum and name_count match a histogram family name (name_sum, name_count a summary).
--extra-names FILE: more metric family names (one per line, "#" comments) accepted as present;
  alone, without --scrape, the names in it are the whole list of known families.
--promtool PATH: also parse every expression with "PATH check rules", after substituting
  $__rate_interval and the variables, as recording rules (one group per expression).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

DS_REF = {"type": "prometheus", "uid": "${datasource}"}
GRAFANA_BUILTIN_DS_UIDS = {"-- Grafana --", "grafana"}
REQUIRED_TAG = "neutracer"
PROCESS_DASHBOARD_UID = "neutracer-process"
DAEMON_HOSTS = {"${instance:raw}", "${__field.labels.instance:raw}", "${__data.fields.instance:raw}"}

# Series Prometheus adds to every scrape target; never in a scrape of the daemon.
SYNTHETIC_METRICS = {
    "up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_series_added",
    "scrape_samples_post_metric_relabeling", "scrape_timeout_seconds", "scrape_sample_limit",
    "scrape_body_size_bytes",
}
# neutracer_cuda_* / neutracer_process_* families that have no pid label.
NODE_WIDE_PER_PROCESS_PREFIX_EXCEPTIONS = {
    "neutracer_cuda_processes", "neutracer_cuda_exits_holding_memory_total",
    "neutracer_cuda_memory_held_at_exit_bytes_total",
}
# Families with a gpu label: the per-process figures the daemon charges to a GPU, NVML's
# per-process memory and busy time, a process's Xid reports, and every GPU family
# (neutracer_gpu_*). Detector, throughput, sync,
# error and OS families have none.
GPU_FAMILIES = {
    "neutracer_cuda_kernel_launches_total", "neutracer_cuda_memory_used_bytes",
    "neutracer_cuda_memory_peak_bytes", "neutracer_cuda_memory_allocations_total",
    "neutracer_cuda_memory_frees_total", "neutracer_cuda_memory_allocated_bytes_total",
    "neutracer_cuda_memory_freed_bytes_total", "neutracer_cuda_memcpy_bytes_total",
    "neutracer_cuda_memcpy_calls_total", "neutracer_nvml_process_memory_used_bytes",
    "neutracer_cuda_xid_errors_total", "neutracer_process_gpu_busy_seconds_total",
    "neutracer_process_gpu_memory_busy_seconds_total",
    "neutracer_process_gpu_accounting_utilization_ratio",
    "neutracer_process_gpu_accounting_memory_utilization_ratio",
    "neutracer_process_gpu_accounting_max_memory_bytes",
}
GPU_FAMILY_PREFIXES = ("neutracer_gpu_",)
# NVML families: device-wide figures, without namespace/pod labels.
NVML_PREFIXES = ("neutracer_gpu_", "neutracer_nvml_")
# Families with namespace/pod labels besides the per-process ones.
POD_LABELLED_FAMILIES = {
    "neutracer_container_info",
    # NCCL's per-rank series carry their process's labels (docs/nccl.md).
    "neutracer_nccl_collectives_total", "neutracer_nccl_collective_bytes_total",
    "neutracer_nccl_failed_calls_total", "neutracer_nccl_enqueue_seconds_total",
    "neutracer_nccl_seconds_since_last_collective", "neutracer_nccl_rank_waiting",
    "neutracer_nccl_straggler", "neutracer_nccl_straggler_wait_share"}
POD_LABELS = ("namespace", "pod")
# Variables for labels that some series lack: All must match the absent label too.
OPTIONAL_LABEL_VARIABLES = ("gpu", "namespace", "pod")
OPTIONAL_LABEL_ALL_VALUE = ".*"

# Grafana unit ids (packages/grafana-data/src/valueFormats/categories.ts), the commonly used ones.
GRAFANA_UNITS = {
    # misc
    "none", "short", "percent", "percentunit", "humidity", "dB", "hex0x", "hex", "sci",
    "locale", "pixel", "string", "bool", "bool_yes_no", "bool_on_off",
    # data
    "bytes", "decbytes", "bits", "decbits", "kbytes", "deckbytes", "mbytes", "decmbytes",
    "gbytes", "decgbytes", "tbytes", "dectbytes", "pbytes", "decpbytes",
    # data rate
    "pps", "binBps", "Bps", "binbps", "bps", "KiBs", "Kibits", "KBs", "Kbits", "MiBs",
    "Mibits", "MBs", "Mbits", "GiBs", "Gibits", "GBs", "Gbits", "TiBs", "Tibits", "TBs",
    "Tbits", "PiBs", "Pibits", "PBs", "Pbits",
    # throughput
    "cps", "ops", "reqps", "rps", "wps", "iops", "eps", "mps", "recps", "rowsps", "cpm",
    "opm", "reqpm", "rpm", "wpm", "epm", "mpm", "recpm", "rowspm",
    # time
    "hertz", "ns", "µs", "ms", "s", "m", "h", "d", "dtdurationms", "dtdurations",
    "dthms", "dtdhms", "timeticks", "clockms", "clocks",
    # date
    "dateTimeAsIso", "dateTimeAsIsoNoDateIfToday", "dateTimeAsUS",
    "dateTimeAsUSNoDateIfToday", "dateTimeAsLocal", "dateTimeAsLocalNoDateIfToday",
    "dateTimeAsSystem", "dateTimeFromNow",
    # temperature, energy
    "celsius", "fahrenheit", "kelvin", "watt", "kwatt", "joule", "percent",
}
CUSTOM_UNIT_RE = re.compile(r"^(suffix|prefix|si|count|currency|time|bool):")

UID_RE = re.compile(r"^[A-Za-z0-9_-]{8,40}$")
DS_PLACEHOLDER_RE = re.compile(r"\$\{DS_[A-Za-z0-9_]+\}|\$DS_[A-Za-z0-9_]+")

RATE_FUNCS = {"rate", "irate", "increase"}
AGGREGATORS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile", "limitk", "limit_ratio",
}
KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "atan2", "start", "end", "inf", "nan", "Inf", "NaN",
} | AGGREGATORS
GROUPING_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
METRIC_NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


# ---------------------------------------------------------------------------------------------
# A small PromQL lexer: enough to find metric selectors, function calls and ranges.
# ---------------------------------------------------------------------------------------------
TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<var>\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\[\[[^\]]*\]\])
  | (?P<number>(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(?:[a-zA-Z]+\d*)*)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=,(){}\[\]@])
  | (?P<other>.)
""", re.VERBOSE)


class Token:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind, text, pos):
        self.kind, self.text, self.pos = kind, text, pos


def lex(expr):
    out = []
    for m in TOKEN_RE.finditer(expr):
        kind = m.lastgroup
        if kind in ("ws", "comment"):
            continue
        out.append(Token(kind, m.group(), m.start()))
    return out


def _match_close(tokens, i, open_text, close_text):
    """Index of the token closing tokens[i] (an opening bracket), or len(tokens)."""
    depth = 0
    for j in range(i, len(tokens)):
        t = tokens[j]
        if t.kind != "op":
            continue
        if t.text == open_text:
            depth += 1
        elif t.text == close_text:
            depth -= 1
            if depth == 0:
                return j
    return len(tokens)


class Selector:
    def __init__(self, name, matchers, index):
        self.name = name          # metric name
        self.matchers = matchers  # list of (label, op, value)
        self.index = index        # token index of the name


class ParsedExpr:
    def __init__(self, expr):
        self.expr = expr
        self.tokens = lex(expr)
        self.selectors = []
        self.calls = []        # (func name, open paren index, close paren index)
        self.ranges = []       # (open bracket index, text inside the brackets)
        self.grouping = []     # label lists of by/without/on/ignoring/group_*
        self._parse()

    def _parse(self):
        toks = self.tokens
        n = len(toks)
        i = 0
        while i < n:
            t = toks[i]
            nxt = toks[i + 1] if i + 1 < n else None
            if t.kind == "op" and t.text == "[":
                j = _match_close(toks, i, "[", "]")
                inner = self.expr[t.pos + 1:toks[j].pos] if j < n else self.expr[t.pos + 1:]
                self.ranges.append((i, inner.strip()))
                i = j + 1
                continue
            if t.kind == "op" and t.text == "{":
                # A selector without a metric name ({__name__=...}); nothing to attach it to.
                i = _match_close(toks, i, "{", "}") + 1
                continue
            if t.kind != "ident":
                i += 1
                continue
            if t.text in GROUPING_KEYWORDS and nxt is not None and nxt.text == "(":
                j = _match_close(toks, i + 1, "(", ")")
                self.grouping.append([x.text for x in toks[i + 2:j] if x.kind == "ident"])
                i = j + 1
                continue
            if nxt is not None and nxt.kind == "op" and nxt.text == "(":
                j = _match_close(toks, i + 1, "(", ")")
                self.calls.append((t.text, i + 1, j))
                i += 1
                continue
            if t.text in KEYWORDS:
                i += 1
                continue
            # A metric selector.
            matchers = []
            if nxt is not None and nxt.kind == "op" and nxt.text == "{":
                j = _match_close(toks, i + 1, "{", "}")
                matchers = _parse_matchers(toks[i + 2:j])
                self.selectors.append(Selector(t.text, matchers, i))
                i = j + 1
                continue
            self.selectors.append(Selector(t.text, matchers, i))
            i += 1

    def inside_rate(self, index):
        return any(f in RATE_FUNCS and o < index < c for f, o, c in self.calls)

    def grouped_labels(self):
        return {label for group in self.grouping for label in group}


def _unquote(s):
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'`":
        body = s[1:-1]
        if s[0] != "`":
            body = re.sub(r"\\(.)", r"\1", body)
        return body
    return s


def _parse_matchers(tokens):
    out = []
    k = 0
    while k + 2 < len(tokens):
        name, op, value = tokens[k], tokens[k + 1], tokens[k + 2]
        if name.kind in ("ident", "string") and op.kind == "op" and op.text in ("=", "!=", "=~", "!~"):
            out.append((_unquote(name.text), op.text, _unquote(value.text)))
            k += 3
        else:
            k += 1
        if k < len(tokens) and tokens[k].text == ",":
            k += 1
    return out


def is_per_process(name):
    return (name.startswith("neutracer_cuda_") or name.startswith("neutracer_process_")) \
        and name not in NODE_WIDE_PER_PROCESS_PREFIX_EXCEPTIONS


def has_gpu_label(name):
    return name in GPU_FAMILIES or name.startswith(GPU_FAMILY_PREFIXES)


def has_pod_labels(name):
    return is_per_process(name) or name in POD_LABELLED_FAMILIES


def has_matcher(selector, label, var):
    allowed_values = {"$" + var, "${" + var + "}"}
    return any(l == label and op in ("=~", "=") and v in allowed_values
               for l, op, v in selector.matchers)


def variable_query_text(var):
    q = var.get("query")
    if isinstance(q, dict):
        q = q.get("query", "")
    return q if isinstance(q, str) else ""


# ---------------------------------------------------------------------------------------------
# Scrape parsing
# ---------------------------------------------------------------------------------------------
def parse_scrape_families(text):
    """Set of series names a scrape's # TYPE lines allow (histogram/summary suffixes expanded)."""
    names = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[0] == "#" and parts[1] == "TYPE":
            name, mtype = parts[2], parts[3]
            names.add(name)
            if mtype in ("histogram", "gaugehistogram"):
                names.update({name + "_bucket", name + "_sum", name + "_count"})
            elif mtype == "summary":
                names.update({name + "_sum", name + "_count"})
    return names


def parse_name_list(text):
    names = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(line)
    return names


# ---------------------------------------------------------------------------------------------
# The checker
# ---------------------------------------------------------------------------------------------
class Expression:
    def __init__(self, where, expr, legend=None, fmt="time_series", kind="target"):
        self.where = where
        self.expr = expr
        self.legend = legend
        self.fmt = fmt
        self.kind = kind  # target, annotation, variable


class Checker:
    def __init__(self):
        self.violations = []
        self.metrics = {}        # name -> set of "file: where"
        self.expressions = []    # (file, Expression) for promtool
        self.uids = {}           # uid -> file
        self.links = []          # (file, where, url) data links to check once all uids are known

    def report(self, fname, where, what):
        self.violations.append(f"{fname}: {where}: {what}")

    # ---- files --------------------------------------------------------------------------
    def check_dir(self, directory):
        files = sorted(f for f in os.listdir(directory) if f.endswith(".json"))
        if not files:
            self.report(directory, "directory", "no *.json dashboards found")
        for f in files:
            self.check_file(os.path.join(directory, f), f)
        for fname, where, url in self.links:
            self.check_link_target(fname, where, url)

    def check_file(self, path, fname):
        try:
            with open(path, encoding="utf-8") as fh:
                raw = fh.read()
            dash = json.loads(raw)
        except (OSError, UnicodeDecodeError, ValueError) as e:
            self.report(fname, "file", f"cannot read dashboard JSON: {e}")
            return
        if not isinstance(dash, dict):
            self.report(fname, "file", "the top level is not a JSON object")
            return
        self.check_dashboard(fname, dash, raw)

    # ---- dashboard level ----------------------------------------------------------------
    def check_dashboard(self, fname, dash, raw):
        where = "dashboard"
        if "__inputs" in dash:
            self.report(fname, where, '"__inputs" present: file provisioning cannot resolve it; '
                        'use the datasource variable')
        for m in sorted(set(DS_PLACEHOLDER_RE.findall(raw))):
            self.report(fname, where, f'"{m}" placeholder: use {{"type":"prometheus","uid":"${{datasource}}"}}')
        if dash.get("id") is not None:
            self.report(fname, where, '"id" must be null (Grafana assigns it)')
        uid = dash.get("uid")
        if not isinstance(uid, str) or not UID_RE.match(uid):
            self.report(fname, where, f'"uid" must be a stable 8-40 character [A-Za-z0-9_-] string, got {uid!r}')
        elif uid in self.uids:
            self.report(fname, where, f'uid "{uid}" is also used by {self.uids[uid]}')
        else:
            self.uids[uid] = fname
        if not str(dash.get("title", "")).strip():
            self.report(fname, where, "missing title")
        sv = dash.get("schemaVersion")
        if not isinstance(sv, int) or sv < 36:
            self.report(fname, where, f'"schemaVersion" must be >= 36 (object datasource refs), got {sv!r}')
        if dash.get("editable") is not False:
            self.report(fname, where, '"editable" must be false (provisioned as code)')
        tags = dash.get("tags") or []
        if REQUIRED_TAG not in tags:
            self.report(fname, where, f'tags must include "{REQUIRED_TAG}", got {tags!r}')
        self.check_dashboard_links(fname, dash)
        self.check_datasources_anywhere(fname, dash, "dashboard")

        variables = self.check_variables(fname, dash)
        # The label variables whose filters this dashboard's selectors must apply.
        scope = {name for name in ("pid",) + OPTIONAL_LABEL_VARIABLES if name in variables}
        self.check_annotations(fname, dash, scope)

        panels = dash.get("panels")
        if not isinstance(panels, list) or not panels:
            self.report(fname, where, "no panels")
            return
        ids = {}
        for panel, ptitle in self.walk_panels(panels):
            self.check_panel(fname, panel, ptitle, ids, scope)

    def check_dashboard_links(self, fname, dash):
        links = dash.get("links") or []
        ok = any(isinstance(l, dict) and l.get("type") == "dashboards" and l.get("asDropdown") is True
                 and REQUIRED_TAG in (l.get("tags") or []) for l in links)
        if not ok:
            self.report(fname, "dashboard links",
                        f'needs a "dashboards" link with "asDropdown": true and tag "{REQUIRED_TAG}"')
        for l in links:
            if isinstance(l, dict) and l.get("type") == "link" and l.get("url"):
                self.links.append((fname, "dashboard links", l["url"]))

    def check_datasources_anywhere(self, fname, node, path, role=None):
        """Every "datasource" not already checked as a panel's, target's, variable's or annotation's."""
        if isinstance(node, dict):
            checked_here = role in ("target", "annotation") or (
                role == "panel" and node.get("type") != "row") or (
                role == "variable" and node.get("type") == "query")
            for k, v in node.items():
                if k == "datasource" and not checked_here:
                    self.check_ds_value(fname, path, v)
                child_role = {"panels": "panels", "targets": "targets"}.get(k)
                if path == "dashboard.templating" and k == "list":
                    child_role = "variables"
                if path == "dashboard.annotations" and k == "list":
                    child_role = "annotations"
                self.check_datasources_anywhere(fname, v, f"{path}.{k}", child_role)
        elif isinstance(node, list):
            item_role = {"panels": "panel", "targets": "target", "variables": "variable",
                         "annotations": "annotation"}.get(role)
            for i, v in enumerate(node):
                sub = f"{path}[{i}]"
                if item_role == "panel" and isinstance(v, dict) and v.get("title"):
                    sub = f'panel "{v["title"]}"'
                self.check_datasources_anywhere(fname, v, sub, item_role)

    def check_ds_value(self, fname, path, v):
        if v == DS_REF:
            return
        if isinstance(v, dict) and v.get("uid") == "-- Mixed --":
            self.report(fname, path, "mixed datasource: use ${datasource}")
            return
        self.report(fname, path,
                    f'hard-coded datasource {json.dumps(v)}: use {{"type":"prometheus","uid":"${{datasource}}"}}')

    # ---- variables ----------------------------------------------------------------------
    def check_variables(self, fname, dash):
        vlist = (dash.get("templating") or {}).get("list") or []
        by_name = {}
        ds_vars = []
        for v in vlist:
            if not isinstance(v, dict):
                continue
            name = v.get("name", "")
            by_name[name] = v
            where = f'variable "{name}"'
            if v.get("type") == "datasource":
                ds_vars.append(v)
                if name != "datasource":
                    self.report(fname, where, 'the datasource variable must be named "datasource"')
                if v.get("query") != "prometheus":
                    self.report(fname, where, f'datasource variable query must be "prometheus", got {v.get("query")!r}')
            elif v.get("type") == "query":
                if v.get("datasource") != DS_REF:
                    self.report(fname, where, f'datasource must be {json.dumps(DS_REF)}, got {json.dumps(v.get("datasource"))}')
                if v.get("refresh") != 2:
                    self.report(fname, where, '"refresh" must be 2 (on time range change)')
                q = variable_query_text(v)
                if not q.strip():
                    self.report(fname, where, "empty query")
                else:
                    inner = q
                    m = re.match(r"^\s*(?:label_values|query_result)\s*\((.*)\)\s*$", q, re.S)
                    if m:
                        inner = m.group(1)
                        if q.lstrip().startswith("label_values"):
                            # label_values(selector, label): drop the label argument.
                            inner = re.sub(r",\s*[A-Za-z_][A-Za-z0-9_]*\s*$", "", inner)
                    elif re.match(r"^\s*(label_names|metrics)\s*\(", q):
                        inner = ""
                    self.add_expression(fname, Expression(where, inner, kind="variable"), scope=set())
        if len(ds_vars) != 1:
            self.report(fname, "templating", f'needs exactly one variable of type "datasource", found {len(ds_vars)}')
        for name in ("job", "instance"):
            v = by_name.get(name)
            where = f'variable "{name}"'
            if v is None:
                self.report(fname, "templating", f'missing "{name}" query variable')
                continue
            if v.get("type") != "query":
                self.report(fname, where, 'must be of type "query"')
            if v.get("multi") is not True:
                self.report(fname, where, '"multi" must be true')
            if v.get("includeAll") is not True:
                self.report(fname, where, '"includeAll" must be true')
            if v.get("allValue") != ".+":
                self.report(fname, where, f'"allValue" must be ".+", got {v.get("allValue")!r}')
        for name in OPTIONAL_LABEL_VARIABLES:
            v = by_name.get(name)
            if v is None:
                continue
            where = f'variable "{name}"'
            if v.get("type") != "query":
                self.report(fname, where, 'must be of type "query"')
            if v.get("multi") is not True:
                self.report(fname, where, '"multi" must be true')
            if v.get("includeAll") is not True:
                self.report(fname, where, '"includeAll" must be true')
            if v.get("allValue") != OPTIONAL_LABEL_ALL_VALUE:
                self.report(fname, where, f'"allValue" must be "{OPTIONAL_LABEL_ALL_VALUE}" (All must also match '
                            f'series without the {name} label), got {v.get("allValue")!r}')
        return by_name

    # ---- annotations --------------------------------------------------------------------
    def check_annotations(self, fname, dash, scope):
        for a in (dash.get("annotations") or {}).get("list") or []:
            if not isinstance(a, dict):
                continue
            ds = a.get("datasource") or {}
            if isinstance(ds, dict) and (ds.get("type") == "grafana" or ds.get("uid") in GRAFANA_BUILTIN_DS_UIDS):
                continue
            where = f'annotation "{a.get("name", "")}"'
            if ds != DS_REF:
                self.report(fname, where, f'datasource must be {json.dumps(DS_REF)}, got {json.dumps(a.get("datasource"))}')
            expr = a.get("expr")
            if expr is None and isinstance(a.get("target"), dict):
                expr = a["target"].get("expr")
            if not (expr or "").strip():
                self.report(fname, where, "Prometheus annotation without expr")
                continue
            self.add_expression(fname, Expression(where, expr, kind="annotation"), scope)

    # ---- panels -------------------------------------------------------------------------
    def walk_panels(self, panels):
        for p in panels:
            if not isinstance(p, dict):
                continue
            title = str(p.get("title", "")).strip()
            yield p, title
            if p.get("type") == "row" and p.get("panels"):
                yield from self.walk_panels(p["panels"])

    def check_panel(self, fname, p, title, ids, scope):
        where = f'panel "{title}"' if title else f'panel id {p.get("id")!r} (untitled)'
        ptype = p.get("type")
        if not ptype:
            self.report(fname, where, 'missing "type"')
        pid = p.get("id")
        if not isinstance(pid, int):
            self.report(fname, where, f'"id" must be an integer, got {pid!r}')
        elif pid in ids:
            self.report(fname, where, f'duplicate panel id {pid} (also "{ids[pid]}")')
        else:
            ids[pid] = title
        gp = p.get("gridPos")
        if not isinstance(gp, dict) or not all(isinstance(gp.get(k), int) for k in ("h", "w", "x", "y")):
            self.report(fname, where, 'missing or incomplete "gridPos" (h, w, x, y)')
        elif gp["x"] < 0 or gp["w"] <= 0 or gp["x"] + gp["w"] > 24 or gp["h"] <= 0:
            self.report(fname, where, f"gridPos {gp} is outside the 24-column grid")
        if not title:
            self.report(fname, where, "missing title")
        if ptype == "row":
            return
        if not str(p.get("description", "")).strip():
            self.report(fname, where, "missing description")
        if p.get("datasource") != DS_REF:
            self.report(fname, where, f'panel datasource must be {json.dumps(DS_REF)}, got {json.dumps(p.get("datasource"))}')
        fc = p.get("fieldConfig") or {}
        defaults = fc.get("defaults") or {}
        unit = defaults.get("unit")
        if not unit:
            self.report(fname, where, "missing fieldConfig.defaults.unit")
        elif not self.valid_unit(unit):
            self.report(fname, where, f'unknown unit "{unit}"')
        for o in fc.get("overrides") or []:
            for prop in (o or {}).get("properties") or []:
                if prop.get("id") == "unit" and not self.valid_unit(prop.get("value")):
                    self.report(fname, where, f'unknown unit "{prop.get("value")}" in an override')
                if prop.get("id") == "links":
                    for l in prop.get("value") or []:
                        self.collect_link(fname, where, l)
        for l in defaults.get("links") or []:
            self.collect_link(fname, where, l)
        for l in p.get("links") or []:
            self.collect_link(fname, where, l)
        for tr in p.get("transformations") or []:
            if isinstance(tr, dict) and tr.get("id") == "renameByRegex":
                self.report(fname, where, "renameByRegex transformation: show labels (kernel names) as exported")
        targets = p.get("targets")
        if ptype in ("text", "news", "dashlist", "welcome"):
            return
        if not isinstance(targets, list) or not targets:
            self.report(fname, where, "no targets")
            return
        for t in targets:
            if not isinstance(t, dict):
                continue
            twhere = f'{where} target {t.get("refId", "?")}'
            if t.get("datasource") != DS_REF:
                self.report(fname, twhere, f'target datasource must be {json.dumps(DS_REF)}, got {json.dumps(t.get("datasource"))}')
            if t.get("hide") is True:
                continue
            expr = t.get("expr")
            if not (expr or "").strip():
                self.report(fname, twhere, "empty expr")
                continue
            self.add_expression(fname, Expression(twhere, expr, t.get("legendFormat"), t.get("format") or "time_series"),
                                scope)

    @staticmethod
    def valid_unit(unit):
        return isinstance(unit, str) and (unit in GRAFANA_UNITS or bool(CUSTOM_UNIT_RE.match(unit)))

    def collect_link(self, fname, where, link):
        if isinstance(link, dict) and isinstance(link.get("url"), str):
            self.links.append((fname, where, link["url"]))

    def check_link_target(self, fname, where, url):
        page = re.match(r"https?://([^/]*)/(flame|memory)\b", url)
        if page:
            if page.group(1) not in DAEMON_HOSTS:
                self.report(fname, where, f"link to the daemon's /{page.group(2)} must take its host from "
                            "the instance, raw: http://${instance:raw} (or ${__field.labels.instance:raw}, "
                            "${__data.fields.instance:raw})")
            if not re.search(r"[?&]pid=\$\{[^}]+\}", url):
                self.report(fname, where, f"link to the daemon's /{page.group(2)} must pass pid=${{pid}} "
                            "(or a field's pid)")
            return
        m = re.search(r"/d/([A-Za-z0-9_-]+)", url)
        if not m:
            return
        uid = m.group(1)
        if uid not in self.uids:
            self.report(fname, where, f'data link to dashboard uid "{uid}", which is not in the directory')
        if uid == PROCESS_DASHBOARD_UID and not re.search(
                r"var-pid=\$\{__(field\.labels|data\.fields)\.pid\}", url):
            self.report(fname, where, "link to the process dashboard must pass var-pid=${__field.labels.pid}")

    # ---- expressions --------------------------------------------------------------------
    def add_expression(self, fname, e, scope):
        try:
            parsed = ParsedExpr(e.expr)
        except Exception as ex:  # a lexer bug must not hide the other checks
            self.report(fname, e.where, f"cannot parse expression: {ex}")
            return
        for s in parsed.selectors:
            self.metrics.setdefault(s.name, set()).add(f"{fname}: {e.where}")
        if e.kind == "variable":
            return
        self.expressions.append((fname, e))
        where = e.where
        device_wide = any(s.name.startswith(NVML_PREFIXES) for s in parsed.selectors)
        for s in parsed.selectors:
            if not (s.name.startswith("neutracer_") or s.name.startswith("process_")
                    or s.name in SYNTHETIC_METRICS):
                self.report(fname, where, f'"{s.name}" is not a neutracerd metric (neutracer_*, process_*) '
                            f'nor a series Prometheus adds (up, scrape_duration_seconds, ...)')
            missing = [m for m, var in (('job=~"$job"', "job"), ('instance=~"$instance"', "instance"))
                       if not has_matcher(s, var, var)]
            if missing:
                self.report(fname, where, f'selector "{s.name}" must filter {",".join(missing)}')
            if "pid" in scope and is_per_process(s.name) and not has_matcher(s, "pid", "pid"):
                self.report(fname, where, f'selector "{s.name}" must filter pid=~"$pid" on a per-process dashboard')
            self.check_label_scope(fname, where, s, scope, device_wide)
            if (s.name.endswith("_total") or s.name.endswith("_bucket")) and not parsed.inside_rate(s.index):
                self.report(fname, where, f'counter "{s.name}" must be wrapped in rate(), irate() or increase()')
        for func, open_i, close_i in parsed.calls:
            if func not in RATE_FUNCS:
                continue
            ranges = [txt for idx, txt in parsed.ranges if open_i < idx < close_i]
            if not ranges:
                self.report(fname, where, f"{func}() without a range: use [$__rate_interval]")
            for txt in ranges:
                if txt != "$__rate_interval":
                    self.report(fname, where, f"{func}() uses [{txt}]: use [$__rate_interval]")
        for func, open_i, close_i in parsed.calls:
            if func == "label_replace":
                args = [parsed.tokens[k].text for k in range(open_i, close_i)
                        if parsed.tokens[k].kind == "string"]
                if args and _unquote(args[0]) == "kernel":
                    self.report(fname, where, "label_replace() rewrites the kernel label: show kernel names as exported")
        if e.kind != "target":
            return
        legend = e.legend or ""
        grouped = parsed.grouped_labels()
        if e.fmt == "time_series" and not legend.strip():
            self.report(fname, where, "missing legendFormat")
        if "kernel" in grouped and "{{kernel}}" not in legend.replace(" ", ""):
            self.report(fname, where, "grouped by kernel: legendFormat must show {{kernel}}")
        legend_ns = legend.replace(" ", "")
        shows_pid = "pid" in grouped or "{{pid}}" in legend_ns
        if shows_pid and e.fmt == "time_series" and "{{comm}}({{pid}})" not in legend_ns:
            self.report(fname, where, f'legendFormat must show processes as "{{{{comm}}}} ({{{{pid}}}})", got {legend!r}')

    def check_label_scope(self, fname, where, s, scope, device_wide):
        """gpu, namespace and pod filters where the family has the label, and only there."""
        matched = {label for label, _, _ in s.matchers}
        if has_gpu_label(s.name):
            if "gpu" in scope and not has_matcher(s, "gpu", "gpu"):
                self.report(fname, where, f'selector "{s.name}" must filter gpu=~"$gpu"')
        elif "gpu" in matched:
            self.report(fname, where, f'selector "{s.name}" has a gpu matcher, but the family has no gpu '
                        f'label: choosing one GPU would empty it')
        if has_pod_labels(s.name):
            if not device_wide:
                missing = [f'{v}=~"${v}"' for v in POD_LABELS if v in scope and not has_matcher(s, v, v)]
                if missing:
                    self.report(fname, where, f'selector "{s.name}" must filter {",".join(missing)}')
        else:
            for label in POD_LABELS:
                if label in matched:
                    self.report(fname, where, f'selector "{s.name}" has a {label} matcher, but the family has '
                                f'no {label} label: choosing one {label} would empty it')

    # ---- metrics against a scrape -------------------------------------------------------
    def check_metrics_known(self, known, source):
        for name in sorted(self.metrics):
            if not (name.startswith("neutracer_") or name.startswith("process_")):
                continue
            if name in known:
                continue
            for where in sorted(self.metrics[name]):
                wfile, wwhere = where.split(": ", 1)
                self.report(wfile, wwhere, f'metric "{name}" is not a family in {source}')

    # ---- promtool -----------------------------------------------------------------------
    def check_with_promtool(self, promtool):
        groups = []
        for n, (fname, e) in enumerate(self.expressions):
            expr = substitute_variables(e.expr)
            groups.append((f"{fname} | {e.where} | #{n}", expr))
        if not groups:
            return
        lines = ["groups:"]
        for name, expr in groups:
            lines.append(f"  - name: {json.dumps(name)}")
            lines.append("    rules:")
            lines.append("      - record: dashboard_check:expr")
            lines.append(f"        expr: {json.dumps(expr)}")
        with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False, encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
            path = fh.name
        try:
            proc = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True)
        except OSError as ex:
            os.unlink(path)
            self.report("promtool", "run", f"cannot run {promtool}: {ex}")
            return
        try:
            if proc.returncode != 0:
                out = proc.stdout + proc.stderr
                found = False
                for line in out.splitlines():
                    m = re.search(r'group "(.*?) \| (.*) \| #\d+", rule \d+, "[^"]*": (.*)$', line)
                    if m:
                        found = True
                        unq = [g.replace('\\"', '"') for g in m.groups()]
                        self.report(unq[0], unq[1], f"promtool: {unq[2]}")
                if not found:
                    self.report("promtool", "check rules", out.strip().replace("\n", " | "))
        finally:
            os.unlink(path)


def substitute_variables(expr):
    """What dashboard-linter does before parsing: variables become plausible PromQL."""
    expr = re.sub(r"\$__rate_interval|\$\{__rate_interval\}|\$__interval|\$\{__interval\}|\$__range|\$\{__range\}",
                  "5m", expr)
    expr = re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::[a-z]+)?\}|\$[A-Za-z_][A-Za-z0-9_]*|\[\[[^\]]*\]\]", ".+", expr)
    return expr


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("directory", metavar="DASHBOARD_DIR")
    ap.add_argument("--scrape", metavar="FILE", help="Prometheus text exposition captured from neutracerd")
    ap.add_argument("--extra-names", metavar="FILE", help="more accepted metric family names, one per line")
    ap.add_argument("--promtool", metavar="PATH", help="also parse every expression with PATH check rules")
    ap.add_argument("--list-metrics", action="store_true", help="print referenced metric names and exit")
    args = ap.parse_args(argv)

    if not os.path.isdir(args.directory):
        print(f"check_dashboards: {args.directory}: not a directory", file=sys.stderr)
        return 2
    c = Checker()
    c.check_dir(args.directory)
    if args.list_metrics:
        for name in sorted(c.metrics):
            print(name)
        return 0

    known = set()
    sources = []
    try:
        if args.scrape:
            with open(args.scrape, encoding="utf-8") as fh:
                fams = parse_scrape_families(fh.read())
            if not fams:
                print(f"check_dashboards: {args.scrape}: no '# TYPE' lines", file=sys.stderr)
                return 2
            known |= fams
            sources.append(args.scrape)
        if args.extra_names:
            with open(args.extra_names, encoding="utf-8") as fh:
                names = parse_name_list(fh.read())
            for n in names:
                known.update({n, n + "_bucket", n + "_sum", n + "_count"})
            sources.append(args.extra_names)
    except OSError as ex:
        print(f"check_dashboards: {ex}", file=sys.stderr)
        return 2
    if sources:
        c.check_metrics_known(known, " + ".join(sources))
    if args.promtool:
        c.check_with_promtool(args.promtool)

    for v in c.violations:
        print(v)
    if c.violations:
        print(f"check_dashboards: {len(c.violations)} violation(s)", file=sys.stderr)
        return 1
    n = len([f for f in os.listdir(args.directory) if f.endswith(".json")])
    print(f"check_dashboards: {n} dashboard(s), {len(c.expressions)} expressions, "
          f"{len(c.metrics)} metric names: OK", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
