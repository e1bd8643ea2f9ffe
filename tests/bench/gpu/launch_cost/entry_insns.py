#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The first instruction of each probed function of a library, and whether the x86 kernel
emulates it when a uprobe there fires or must single-step it out of line.

    entry_insns.py LIB [NAME ...] [--daemon-table | --symbols-file FILE] [--objdump PATH]

NAMEs: exported function symbols; --daemon-table adds every symbol neutracerd probes (read from
the repository's cuda_api_table.cpp); --symbols-file reads names from a file, one a line. For each: file offset, the first 16 bytes, a
classification of the first instruction, and (when objdump exists) its disassembly of the first
three instructions.

Why it matters: on x86 a uprobe replaces the first byte by int3. When it fires, the kernel runs
the BPF program and then must execute the displaced instruction. arch/x86/kernel/uprobes.c
emulates a few kinds in the kernel (push of a register, jmp/call/jcc rel, nops): the task
returns to user space once. Everything else (mov, sub, lea, endbr64, ...) is copied to the
process's XOL page and single-stepped: a return to user space with TF set, a #DB trap, a second
kernel entry, fix-ups, a second return. In a virtual machine #DB is also intercepted by the
hypervisor.
"""
import argparse
import glob
import os
import re
import shutil
import struct
import subprocess
import sys


def read_elf(path):
    """{name: (vaddr, file offset)} for defined FUNC symbols of .dynsym."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise SystemExit(f"{path}: not a 64-bit ELF file")
    (e_phoff, e_shoff) = struct.unpack_from("<QQ", data, 0x20)
    (e_phentsize, e_phnum, e_shentsize, e_shnum) = struct.unpack_from("<HHHH", data, 0x36)
    loads = []
    for i in range(e_phnum):
        p_type, p_flags, p_offset, p_vaddr, _pa, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, e_phoff + i * e_phentsize)
        if p_type == 1 and p_flags & 1:
            loads.append((p_vaddr, p_offset, p_filesz))
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize)
                for i in range(e_shnum)]
    symbols = {}
    for sh in sections:
        if sh[1] != 11:  # SHT_DYNSYM
            continue
        strtab = sections[sh[6]]
        str_off = strtab[4]
        for j in range(sh[5] // 24):
            st_name, st_info, _other, st_shndx, st_value, _size = struct.unpack_from(
                "<IBBHQQ", data, sh[4] + j * 24)
            if (st_info & 0xF) != 2 or st_shndx == 0 or st_value == 0:
                continue
            end = data.index(b"\0", str_off + st_name)
            name = data[str_off + st_name:end].decode()
            for vaddr, offset, size in loads:
                if vaddr <= st_value < vaddr + size:
                    symbols[name] = (st_value, st_value - vaddr + offset)
    return data, symbols


def classify(code):
    """(short text, 'emulated' | 'single-step') for the first instruction's bytes."""
    b = code
    i = 0
    while i < len(b) and b[i] in (0x66, 0x67, 0x2E, 0x3E, 0xF2, 0xF3) and \
            b[i:i + 4] != b"\xf3\x0f\x1e\xfa":
        i += 1
    if b[:4] == b"\xf3\x0f\x1e\xfa":
        return "endbr64", "single-step"
    rex = b[i] if 0x40 <= b[i] <= 0x4F else None
    j = i + 1 if rex is not None else i  # the opcode byte
    op, nxt = b[j], b[j + 1]  # nxt: ModRM, or the second opcode byte after 0x0f
    if 0x50 <= op <= 0x57:
        reg = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi"][op - 0x50]
        if rex is not None and rex & 1:
            reg = f"r{8 + op - 0x50}"
        return f"push %{reg}", "emulated"
    if op in (0xE9, 0xEB):
        return "jmp rel", "emulated"
    if op == 0xE8:
        return "call rel", "emulated"
    if 0x70 <= op <= 0x7F:
        return "jcc rel8", "emulated"
    if op == 0x90:
        return "nop", "emulated"
    if op == 0x0F and nxt == 0x1F:
        return "nopl (multi-byte nop)", "emulated if it is one of the kernel's x86_nops"
    if op == 0x0F and 0x80 <= nxt <= 0x8F:
        return "jcc rel32", "emulated"
    if op == 0xFF and (nxt >> 3) & 7 == 4:
        return "jmp indirect", "single-step"
    if op in (0x89, 0x8B):
        return "mov", "single-step"
    if op == 0x83 and (nxt >> 3) & 7 == 5:
        return "sub imm8", "single-step"
    if op == 0x81 and (nxt >> 3) & 7 == 5:
        return "sub imm32", "single-step"
    if op == 0x8D:
        return "lea", "single-step"
    if op in (0x31, 0x33):
        return "xor", "single-step"
    if op in (0xB8, 0xB9, 0xBA, 0xBB, 0xBE, 0xBF):
        return "mov imm", "single-step"
    return f"opcode {op:#04x}", "single-step (not a push/jmp/call/jcc/nop)"


def daemon_symbols():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = sorted(glob.glob(os.path.join(root, "**", "cuda_api_table.cpp"), recursive=True))
    found = [f for f in found if "/launch_cost/" not in f and "/build" not in f]
    if not found:
        return []
    with open(found[0]) as f:
        return re.findall(r'ProbedSymbol\{"([A-Za-z0-9_]+)"', f.read())


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("lib")
    p.add_argument("names", nargs="*")
    p.add_argument("--daemon-table", action="store_true")
    p.add_argument("--symbols-file", help="one symbol per line (e.g. daemon_symbols.txt)")
    p.add_argument("--objdump", default=shutil.which("objdump"))
    args = p.parse_args()
    path = os.path.realpath(args.lib)
    data, symbols = read_elf(path)
    names = list(args.names)
    if args.symbols_file:
        with open(args.symbols_file) as f:
            names = [ln.strip() for ln in f if ln.strip()] + names
    if args.daemon_table:
        names = daemon_symbols() + [n for n in names if n not in daemon_symbols()]
    print(f"library {path}  ({len(symbols)} exported functions; objdump: {args.objdump or 'none'})")
    print(f"{'symbol':34} {'offset':>10}  {'first 16 bytes':47}  first instruction -> kernel")
    for name in names:
        if name not in symbols:
            print(f"{name:34} {'absent':>10}")
            continue
        vaddr, offset = symbols[name]
        code = data[offset:offset + 16]
        text, how = classify(code)
        print(f"{name:34} {offset:#10x}  {code.hex(' '):47}  {text} -> {how}")
        if args.objdump:
            try:
                out = subprocess.run(
                    [args.objdump, "-d", "--no-show-raw-insn", f"--start-address={vaddr:#x}",
                     f"--stop-address={vaddr + 16:#x}", path],
                    capture_output=True, text=True, timeout=60).stdout
                lines = [ln.strip() for ln in out.splitlines() if re.match(r"\s+[0-9a-f]+:", ln)]
                print(f"{'':46}objdump: " + " | ".join(" ".join(ln.split()[1:]) for ln in lines[:3]))
            except Exception as exc:  # objdump missing or slow: the bytes above still tell
                print(f"{'':46}objdump failed: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
