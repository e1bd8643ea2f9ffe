# SPDX-License-Identifier: Apache-2.0
"""Shared helpers for the GPU validation scripts: HTTP fetch and a Prometheus text parser.

Standard library only (the GPU machine has no pip and no internet).
"""
import json
import re
import time
import urllib.error
import urllib.request

DEFAULT_URL = "http://127.0.0.1:19555"


def fetch(url, timeout=5.0):
    """GET url and return the body as text; raises RuntimeError with a clear message."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read().decode("utf-8", errors="replace")
    except (urllib.error.URLError, OSError) as exc:
        raise RuntimeError(f"GET {url} failed: {exc}") from exc


_NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def _parse_labels(text, i):
    """Parse '{a="x",b="y"}' starting at text[i] == '{'. Returns (labels, index after '}')."""
    labels = {}
    assert text[i] == "{"
    i += 1
    n = len(text)
    while True:
        while i < n and text[i] in " \t,":
            i += 1
        if i >= n:
            raise ValueError("unterminated label set")
        if text[i] == "}":
            return labels, i + 1
        m = _NAME_RE.match(text, i)
        if not m:
            raise ValueError(f"bad label name at column {i}")
        name = m.group(0)
        i = m.end()
        while i < n and text[i] in " \t":
            i += 1
        if i >= n or text[i] != "=":
            raise ValueError(f"expected '=' after label {name}")
        i += 1
        while i < n and text[i] in " \t":
            i += 1
        if i >= n or text[i] != '"':
            raise ValueError(f"expected '\"' for label {name}")
        i += 1
        value = []
        while True:
            if i >= n:
                raise ValueError(f"unterminated value for label {name}")
            c = text[i]
            if c == "\\":
                if i + 1 >= n:
                    raise ValueError("dangling backslash")
                e = text[i + 1]
                value.append({"n": "\n", "\\": "\\", '"': '"'}.get(e, "\\" + e))
                i += 2
            elif c == '"':
                i += 1
                break
            else:
                value.append(c)
                i += 1
        labels[name] = "".join(value)


def _parse_value(token):
    t = token.strip()
    if t in ("+Inf", "Inf"):
        return float("inf")
    if t == "-Inf":
        return float("-inf")
    if t == "NaN":
        return float("nan")
    return float(t)


def parse_prometheus(text):
    """Parse Prometheus text exposition. Returns a list of (name, labels dict, value)."""
    samples = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _NAME_RE.match(line)
        if not m:
            raise ValueError(f"line {lineno}: cannot parse metric name: {raw!r}")
        name = m.group(0)
        i = m.end()
        labels = {}
        if i < len(line) and line[i] == "{":
            try:
                labels, i = _parse_labels(line, i)
            except ValueError as exc:
                raise ValueError(f"line {lineno}: {exc}: {raw!r}") from exc
        rest = line[i:].split()
        if not rest:
            raise ValueError(f"line {lineno}: missing value: {raw!r}")
        samples.append((name, labels, _parse_value(rest[0])))
    return samples


def select(samples, name, **labels):
    """Samples of metric `name` whose labels include all of `labels` (values compared as str)."""
    want = {k: str(v) for k, v in labels.items()}
    return [(l, v) for (n, l, v) in samples if n == name and all(l.get(k) == x for k, x in want.items())]


def value_sum(samples, name, **labels):
    return sum(v for _, v in select(samples, name, **labels))


def wait_for(predicate, timeout, what, interval=0.1):
    """predicate()'s first true value within `timeout` seconds; RuntimeError naming `what`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise RuntimeError(f"timed out waiting for {what}")


def load_json(path):
    with open(path, "r", encoding="utf-8") as f:
        return json.load(f)


# --------------------------------------------------------------------------------------------
# Approximate Python port of the daemon's short kernel name rule. Used only as a fallback when a
# profiler name is not found verbatim in any `full_names` list of /api/v1/kernels.

def _strip_brackets_depth0(text):
    """Return depth-0 text with <...> and (...) groups replaced by markers."""
    out = []
    depth = 0
    i = 0
    while i < len(text):
        if text.startswith("operator", i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            j = i + len("operator")
            if j < len(text) and (text[j].isalnum() or text[j] == "_"):
                pass  # identifier like operator_add
            else:
                # consume operator symbol(s)
                k = j
                if text.startswith("()", k):
                    k += 2
                else:
                    while k < len(text) and k - j < 3 and text[k] in "+-*/%^&|~!=<>,[]":
                        k += 1
                if depth == 0:
                    out.append(text[i:k])
                i = k
                continue
        c = text[i]
        if c in "<(":
            if depth == 0:
                out.append("\x00" if c == "(" else "\x01")
            depth += 1
        elif c in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(c)
        i += 1
    return "".join(out)


def short_kernel_name(full):
    """`void ns::foo<int>(float*)` -> `foo`; `add_kernel` -> `add_kernel`."""
    name = full.strip()
    flat = _strip_brackets_depth0(name)
    # Drop everything from the last depth-0 argument list that is not followed by '::'.
    parts = flat.split("\x00")
    if len(parts) > 1:
        # find the last '(' whose continuation does not start with '::'
        keep = parts[0]
        for idx in range(1, len(parts)):
            cont = parts[idx].lstrip("\x01")
            if cont.startswith("::"):
                keep = keep + "()" + parts[idx]
            else:
                break
        flat = keep
    flat = flat.replace("\x01", "")
    # Return type / qualifiers: take the last whitespace separated token.
    tokens = flat.split()
    if not tokens:
        return name
    last = tokens[-1]
    # Namespaces / enclosing scopes.
    last = last.split("::")[-1]
    return last or name
