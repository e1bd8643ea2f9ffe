#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the python_line_table seed corpus in its harness's format (python_line_table_fuzzer.cpp):
a format byte (0: 3.9 co_lnotab, 1: 3.10 co_linetable, 2: 3.11+ location table), the first line
(int32) and the byte offset (int64), little-endian, then the table.

The real tables are this interpreter's own: run it with each CPython at hand to seed each format.

    python3 tests/fuzz/make_python_line_table_seeds.py tests/fuzz/corpus/python_line_table
"""
import os
import struct
import sys

VERSION = sys.version_info[:2]
FORMAT = {(3, 9): 0, (3, 10): 1}.get(VERSION, 2)


def seed(format_id, first_line, offset, table):
    return struct.pack("<Biq", format_id, first_line, offset) + bytes(table)


def sample(a, b=1):
    """A small function with a loop, a call and a branch: several lines and entry kinds."""
    total = 0
    for i in range(a):
        if i % 2:
            total += b
        else:
            total -= sample(0)
    return total


def real_seeds():
    code = sample.__code__
    table = code.co_lnotab if VERSION == (3, 9) else code.co_linetable
    name = f"real_{VERSION[0]}_{VERSION[1]}"
    return {
        f"{name}_start": seed(FORMAT, code.co_firstlineno, 0, table),
        f"{name}_middle": seed(FORMAT, code.co_firstlineno, len(code.co_code) // 2, table),
        f"{name}_end": seed(FORMAT, code.co_firstlineno, len(code.co_code) - 2, table),
    }


HAND_SEEDS = {
    "lnotab_pairs": seed(0, 10, 14, [6, 1, 8, 2, 4, 0xFF]),
    "linetable310_no_line": seed(1, 10, 10, [4, 0, 6, 1, 2, 0x80, 0, 127, 4, 6]),
    # short form, one-line, none, no-columns and long entries
    "locations_every_kind": seed(2, 10, 14, [0x80, 0x05, 0xD9, 0x04, 0x08, 0xF8, 0xEA, 0x07,
                                             0xF0, 0x48, 0x03, 0x00, 0x05, 0x09]),
    "not_started": seed(2, 42, -2, []),
}

if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    for file_name, data in {**HAND_SEEDS, **real_seeds()}.items():
        with open(os.path.join(sys.argv[1], file_name), "wb") as out:
            out.write(data)
