#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when a source file of the project lacks its SPDX-License-Identifier line or has the
wrong licence for its place.

Source files: *.cpp, *.h, *.c, *.cu, *.py, *.sh, *.cmake and CMakeLists.txt that git tracks or
would track (`git ls-files --cached --others --exclude-standard`: new files count before they are
added), except the fuzz corpora (tests/fuzz/corpus/) and test fixtures (tests/fixtures/).
Licences: bpf/neutracer_abi.h "GPL-2.0 OR Apache-2.0" (the BPF programs and the daemon both
include it); the rest of bpf/ and every BPF program elsewhere (*.bpf.c, *.bpf.h) "GPL-2.0" (the
kernel wants a GPL-compatible licence for the helpers they call); everything else "Apache-2.0".
The line is the first one, or the second after a #! line, in the file's comment syntax:
"# SPDX-License-Identifier: X" (Python, shell, CMake), "// SPDX-License-Identifier: X" or
"/* SPDX-License-Identifier: X */" (C, C++, CUDA).

Usage: check_spdx.py [REPOSITORY]   (default: the repository this script is in)
Exit status: 0 all good, 1 a file is wrong (each is listed), 77 not a git work tree (skipped).
Python 3 standard library only.
"""
import subprocess
import sys
from pathlib import Path

C_SUFFIXES = (".cpp", ".h", ".c", ".cu")
HASH_SUFFIXES = (".py", ".sh", ".cmake")
HASH_NAMES = ("CMakeLists.txt",)
SKIPPED_FOLDERS = ("tests/fuzz/corpus/", "tests/fixtures/")
DUAL_LICENSED = "bpf/neutracer_abi.h"
TAG = "SPDX-License-Identifier:"
SKIP = 77


def is_source(path):
    """Whether the repository-relative path is a source file that needs an SPDX line."""
    if path.startswith(SKIPPED_FOLDERS):
        return False
    name = path.rsplit("/", 1)[-1]
    return name.endswith(C_SUFFIXES + HASH_SUFFIXES) or name in HASH_NAMES


def expected_licence(path):
    """The SPDX licence expression the repository-relative path must carry."""
    if path == DUAL_LICENSED:
        return "GPL-2.0 OR Apache-2.0"
    if path.startswith("bpf/") or path.endswith((".bpf.c", ".bpf.h")):
        return "GPL-2.0"
    return "Apache-2.0"


def accepted_lines(path, licence):
    """The SPDX lines allowed for the path, in its comment syntax."""
    if path.endswith(".h"):
        return (f"/* {TAG} {licence} */", f"// {TAG} {licence}")
    if path.endswith(C_SUFFIXES):
        return (f"// {TAG} {licence}", f"/* {TAG} {licence} */")
    return (f"# {TAG} {licence}",)


def problem(path, text):
    """None when the text carries the path's SPDX line where it belongs, else what is wrong."""
    licence = expected_licence(path)
    lines = text.splitlines()
    at = 1 if lines and lines[0].startswith("#!") else 0
    line = lines[at].rstrip() if len(lines) > at else ""
    if line in accepted_lines(path, licence):
        if len(lines) > at + 1 and lines[at + 1].startswith("#!"):
            return "the #! line must come first, the SPDX line second"
        return None
    where = "second line (after #!)" if at else "first line"
    if TAG in line:
        return f"{where} is {line!r}, want {accepted_lines(path, licence)[0]!r}"
    elsewhere = next((i + 1 for i, other in enumerate(lines) if TAG in other), None)
    if elsewhere:
        return (f"SPDX line on line {elsewhere}, not the {where}; "
                f"want {accepted_lines(path, licence)[0]!r}")
    return f"no SPDX line; want {accepted_lines(path, licence)[0]!r} as the {where}"


def project_files(repository):
    """Tracked and untracked, not ignored, files (repository-relative); None if not in git."""
    result = subprocess.run(
        ["git", "-C", str(repository), "ls-files", "-z", "--cached", "--others",
         "--exclude-standard"], capture_output=True, check=False)
    if result.returncode != 0:
        error = result.stderr.decode(errors="replace").strip()
        if "not a git repository" in error:
            return None
        sys.exit(f"check_spdx: git ls-files failed: {error}")
    return sorted({name.decode() for name in result.stdout.split(b"\0") if name})


def main():
    repository = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    files = project_files(repository)
    if files is None:
        print(f"check_spdx: {repository} is not a git work tree; skipped")
        return SKIP
    checked = failures = 0
    for path in files:
        full = repository / path
        if not is_source(path) or not full.is_file():  # a tracked file deleted in the work tree
            continue
        checked += 1
        issue = problem(path, full.read_text(encoding="utf-8", errors="replace"))
        if issue:
            failures += 1
            print(f"FAIL: {path}: {issue}")
    if checked == 0:
        print("FAIL: no source files found")
        return 1
    print(f"{checked - failures} of {checked} source files carry the right SPDX line")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
