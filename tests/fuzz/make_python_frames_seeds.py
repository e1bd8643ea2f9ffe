#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the python_frames seed corpus (python_frames_fuzzer.cpp): a version byte (2: 3.11),
then a process's memory from _PyRuntime on, at 0x10000, holding one thread with one frame of a
code object "f" in "a.py", laid out at CPython 3.11's offsets (pystacks/python_offsets.cpp).

    python3 tests/fuzz/make_python_frames_seeds.py tests/fuzz/corpus/python_frames
"""
import os
import struct
import sys

BASE = 0x10000
RUNTIME, INTERP, THREAD, CFRAME, FRAME, CODE = 0x0, 0x100, 0x200, 0x300, 0x380, 0x400
FILENAME, NAME, TABLE = 0x600, 0x680, 0x700


def image(first_line=10, instr_units=2):
    memory = bytearray(0x800)

    def put(offset, fmt, value):
        struct.pack_into(fmt, memory, offset, value)

    def pointer(offset, target):
        put(offset, "<Q", BASE + target)

    pointer(RUNTIME + 40, INTERP)               # interpreters.head
    pointer(INTERP + 16, THREAD)                # threads.head
    pointer(THREAD + 16, INTERP)                # interp
    put(THREAD + 152, "<Q", 0x7F0000001000)     # thread_id
    put(THREAD + 160, "<Q", 4242)               # native_thread_id
    pointer(THREAD + 56, CFRAME)                # cframe
    pointer(CFRAME + 8, FRAME)                  # current_frame
    pointer(FRAME + 32, CODE)                   # f_code
    put(FRAME + 56, "<Q", BASE + CODE + 184 + 2 * instr_units)  # prev_instr
    pointer(CODE + 112, FILENAME)               # co_filename
    pointer(CODE + 120, NAME)                   # co_name
    pointer(CODE + 128, NAME)                   # co_qualname
    put(CODE + 72, "<i", first_line)            # co_firstlineno
    pointer(CODE + 136, TABLE)                  # co_linetable
    for offset, text in ((FILENAME, b"a.py"), (NAME, b"f")):
        put(offset + 16, "<q", len(text))       # length
        put(offset + 32, "<I", 0x04 | 0x20 | 0x40 | 0x80)  # kind 1, compact, ascii, ready
        memory[offset + 48:offset + 48 + len(text)] = text
    table = bytes([0xD1, 0, 0, 0xD9, 0, 0])     # +0 for 2 units, +1 for 2 units
    put(TABLE + 16, "<q", len(table))
    memory[TABLE + 32:TABLE + 32 + len(table)] = table
    return bytes([2]) + bytes(memory)


SEEDS = {
    "one_frame_3_11": image(),
    "one_frame_3_11_first_line": image(instr_units=-1),
}

if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    for file_name, data in SEEDS.items():
        with open(os.path.join(sys.argv[1], file_name), "wb") as out:
            out.write(data)
