#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the relative links of the README and docs/: each file exists, each #anchor is a heading
of its file. Usage: check_links.py REPO_ROOT. Exits 1 listing every broken link."""
import os
import re
import sys


def anchors(path):
    """GitHub's anchors of a Markdown file's headings."""
    found = set()
    in_code = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                in_code = not in_code
            if in_code or not line.startswith("#"):
                continue
            text = line.lstrip("#").strip().lower()
            text = re.sub(r"[^\w\- ]", "", text)
            found.add(text.replace(" ", "-"))
    return found


def broken_links(root, files):
    problems = []
    link = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
    for name in files:
        path = os.path.join(root, name)
        in_code = False
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.startswith("```"):
                    in_code = not in_code
                if in_code:
                    continue
                for url in link.findall(line):
                    if re.match(r"^[a-z]+:", url):
                        continue
                    target, _, anchor = url.partition("#")
                    target_path = os.path.normpath(
                        os.path.join(os.path.dirname(path), target)) if target else path
                    where = f"{name}:{number}: {url}"
                    if not os.path.exists(target_path):
                        problems.append(f"{where}: no such file")
                    elif anchor and target_path.endswith(".md") and \
                            anchor not in anchors(target_path):
                        problems.append(f"{where}: no heading #{anchor}")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    files = ["README.md", "BENCHMARKS.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(root, "docs"))
        if f.endswith(".md"))
    problems = broken_links(root, files)
    for problem in problems:
        print(problem)
    print(f"{len(files)} files, {len(problems)} broken links")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
