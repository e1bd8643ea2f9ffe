// SPDX-License-Identifier: Apache-2.0
#pragma once
// The first instruction of a probed function, and whether the x86-64 kernel emulates it when the
// uprobe there fires. A uprobe replaces that instruction's first byte by int3; after the BPF
// program the kernel must still execute the displaced instruction. It emulates a few kinds in
// place (push of a register, jmp/call/jcc with a relative target, nops) and the task returns to
// user space once, ~1 us per hit on our GPU hosts. Everything else (endbr64, mov, sub, lea, ...)
// is copied to the process's out-of-line page and single-stepped: a second trap, 6-7 us per hit.
// Pure decoding of the few forms that matter here, and the read of a function's first bytes.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace neutracer {

struct EntryInstruction {
  // "push %rbp", "push %r12", "endbr64", "jmp rel32", "nop", "sub", "mov", ...; "other 0x48
  // 0x83" (prefixes and opcode bytes) for an instruction not decoded here; "unreadable" when the
  // bytes end before the instruction does.
  std::string text;
  // The kernel emulates it (no single-step). False for unknown and unreadable instructions.
  bool emulated = false;
};

// Classifies the instruction at the start of `code` (x86-64 machine code). A push is emulated
// without prefixes or with REX 0x41 alone (push %r8-%r15); a branch unless it has a 0x66
// prefix (the kernel refuses the probe then). Nops: 90 with prefixes (66 90, f3 90) and the
// 0f 1f /0 family (nopl/nopw of every length, prefixes allowed), all counted as emulated
// (kernels without the generic nop check emulate only the canonical x86_nops forms).
EntryInstruction classify_entry_instruction(std::span<const std::uint8_t> code);

// As many bytes as an x86 instruction can take, and then some: what read_entry_bytes reads.
inline constexpr std::size_t kEntryBytes = 16;

// The kEntryBytes bytes at `file_offset` of the file open as `fd` (pread: the descriptor's own
// position is left alone). The offset is a file offset, as a uprobe takes it and as
// find_symbol_offsets (common/elf_symbols.h) returns it, not a virtual address. nullopt when the
// file ends before kEntryBytes bytes or cannot be read.
std::optional<std::array<std::uint8_t, kEntryBytes>> read_entry_bytes(int fd,
                                                                      std::uint64_t file_offset);

} // namespace neutracer
