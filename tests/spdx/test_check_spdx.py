#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Self-test of check_spdx.py: in a scratch git repository, right lines pass and a missing,
misplaced or wrong-licence line fails, per folder (bpf/, the shared ABI header, the rest)."""
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

CHECKER = Path(__file__).resolve().parent / "check_spdx.py"
sys.path.insert(0, str(CHECKER.parent))
import check_spdx  # noqa: E402

GOOD = {
    "daemon/main.cpp": "// SPDX-License-Identifier: Apache-2.0\nint main() {}\n",
    "daemon/main.h": "// SPDX-License-Identifier: Apache-2.0\n#pragma once\n",
    "scripts/run.sh": "#!/usr/bin/env bash\n# SPDX-License-Identifier: Apache-2.0\ntrue\n",
    "tests/tool.py": "# SPDX-License-Identifier: Apache-2.0\n\"\"\"Doc.\"\"\"\n",
    "CMakeLists.txt": "# SPDX-License-Identifier: Apache-2.0\nproject(x)\n",
    "cmake/Thing.cmake": "# SPDX-License-Identifier: Apache-2.0\n",
    "bpf/CMakeLists.txt": "# SPDX-License-Identifier: GPL-2.0\n",
    "bpf/probe.bpf.c": ("// SPDX-License-Identifier: GPL-2.0\n"
                        "char LICENSE[] SEC(\"license\") = \"GPL\";\n"),
    "bpf/common.bpf.h": "/* SPDX-License-Identifier: GPL-2.0 */\n",
    "bpf/neutracer_abi.h": "/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */\n",
    "tests/bench/probe.bpf.c": "// SPDX-License-Identifier: GPL-2.0\n",
    # Not source files, or not the project's: never checked.
    "README.md": "no header\n",
    "grafana/dashboards/a.json": "{}\n",
    "tests/fuzz/corpus/python_frames/seed.py": "arbitrary bytes\n",
    "tests/fixtures/proc/1/stat": "1 (x) S\n",
}


def git(repository, *args):
    subprocess.run(["git", "-C", str(repository), *args], check=True, capture_output=True)


class CheckSpdxTest(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory()
        self.repository = Path(self.scratch.name)
        git(self.repository, "init", "-q")
        self.write(GOOD)
        git(self.repository, "add", "daemon", "bpf")  # tracked and untracked files both count

    def tearDown(self):
        self.scratch.cleanup()

    def write(self, files):
        for path, text in files.items():
            full = self.repository / path
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text(text, encoding="utf-8")

    def run_checker(self):
        result = subprocess.run([sys.executable, "-B", str(CHECKER), str(self.repository)],
                                capture_output=True, text=True, check=False)
        return result.returncode, result.stdout

    def test_right_lines_pass(self):
        code, out = self.run_checker()
        self.assertEqual(code, 0, out)
        self.assertIn("11 of 11 source files", out)

    def test_wrong_files_fail(self):
        cases = {
            "daemon/new.cpp": "int x;\n",  # missing, in a new untracked file
            "bpf/maps.bpf.h": "/* SPDX-License-Identifier: Apache-2.0 */\n",  # bpf/ is GPL
            "bpf/neutracer_abi.h": "/* SPDX-License-Identifier: GPL-2.0 */\n",  # not dual
            "tests/bench/probe.bpf.c": "// SPDX-License-Identifier: Apache-2.0\n",
            "daemon/main.cpp": "// SPDX-License-Identifier: GPL-2.0\n",  # outside bpf/
            "scripts/run.sh": "# SPDX-License-Identifier: Apache-2.0\n#!/usr/bin/env bash\n",
            "tests/tool.py": "\"\"\"Doc.\"\"\"\n# SPDX-License-Identifier: Apache-2.0\n",
            "CMakeLists.txt": "// SPDX-License-Identifier: Apache-2.0\n",  # wrong syntax
        }
        self.write(cases)
        code, out = self.run_checker()
        self.assertEqual(code, 1, out)
        for path in cases:
            self.assertIn(f"FAIL: {path}:", out)
        self.assertEqual(out.count("FAIL:"), len(cases), out)

    def test_ignored_and_deleted_files_are_not_checked(self):
        self.write({".gitignore": "build/\n", "build/generated.h": "int y;\n"})
        os.remove(self.repository / "daemon/main.h")  # tracked, deleted in the work tree
        code, out = self.run_checker()
        self.assertEqual(code, 0, out)

    def test_outside_git_is_skipped(self):
        with tempfile.TemporaryDirectory() as plain:
            result = subprocess.run([sys.executable, "-B", str(CHECKER), plain],
                                    capture_output=True, text=True, check=False)
        self.assertEqual(result.returncode, check_spdx.SKIP, result.stdout + result.stderr)

    def test_licence_by_place(self):
        self.assertEqual(check_spdx.expected_licence("bpf/neutracer_abi.h"),
                         "GPL-2.0 OR Apache-2.0")
        self.assertEqual(check_spdx.expected_licence("bpf/os_net.bpf.c"), "GPL-2.0")
        self.assertEqual(check_spdx.expected_licence("tests/x/y.bpf.h"), "GPL-2.0")
        self.assertEqual(check_spdx.expected_licence("cuda/event_decoder.h"), "Apache-2.0")


if __name__ == "__main__":
    unittest.main()
