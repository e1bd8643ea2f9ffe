# SPDX-License-Identifier: Apache-2.0
"""For tests/unit/pystacks/python_line_table_test.cpp: the line of every instruction of every code object
of a few stdlib modules, as this interpreter reports it, next to the code object's line table.

One line per code object: "<format> <co_firstlineno> <table hex, or -> <byte offset>:<line> ..."
(line -1: the instruction has none).
"""
import dis
import importlib
import sys
import types

VERSION = sys.version_info[:2]
FORMAT = {(3, 9): "lnotab", (3, 10): "310"}.get(VERSION, "311")
MODULES = ["json.decoder", "argparse", "dataclasses", "typing"]


def code_objects(code):
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from code_objects(constant)


def instruction_lines(code):
    if VERSION >= (3, 10):
        for start, end, line in code.co_lines():
            for offset in range(start, end, 2):
                yield offset, -1 if line is None else line
        return
    # 3.9 has no co_lines(): each line start holds until the next one.
    starts = dict(dis.findlinestarts(code))
    line = code.co_firstlineno
    for offset in range(0, len(code.co_code), 2):
        line = starts.get(offset, line)
        yield offset, line


for name in MODULES:
    path = importlib.import_module(name).__file__
    with open(path, encoding="utf-8") as source:
        module = compile(source.read(), path, "exec")
    for code in code_objects(module):
        table = code.co_lnotab if VERSION == (3, 9) else code.co_linetable
        pairs = " ".join(f"{offset}:{line}" for offset, line in instruction_lines(code))
        print(FORMAT, code.co_firstlineno, table.hex() or "-", pairs)
