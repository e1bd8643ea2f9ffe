// SPDX-License-Identifier: Apache-2.0
#include "cuda/entry_instruction.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <limits>
#include <string_view>
#include <sys/types.h>
#include <unistd.h>

namespace neutracer {

namespace {

using Code = std::span<const std::uint8_t>;

// The 8 operations of the classic ALU opcodes (00-3f, op >> 3) and of group 1 (80/81/83, the
// ModRM reg field).
constexpr std::array<std::string_view, 8> kAluNames{"add", "or",  "adc", "sbb",
                                                    "and", "sub", "xor", "cmp"};
constexpr std::array<std::string_view, 8> kRegisters{"rax", "rcx", "rdx", "rbx",
                                                     "rsp", "rbp", "rsi", "rdi"};
constexpr std::array<std::uint8_t, 4> kEndbr64{0xf3, 0x0f, 0x1e, 0xfa};

bool is_legacy_prefix(std::uint8_t byte) {
  switch (byte) {
  case 0x26: // segment overrides
  case 0x2e:
  case 0x36:
  case 0x3e:
  case 0x64:
  case 0x65:
  case 0x66: // operand size
  case 0x67: // address size
  case 0xf0: // lock
  case 0xf2: // repne / bnd
  case 0xf3: // rep
    return true;
  default:
    return false;
  }
}

// Bytes taken by the ModRM byte at `at` and the SIB byte and displacement it implies (64-bit
// addressing); nullopt when the code ends before the bytes that tell.
std::optional<std::size_t> modrm_length(Code code, std::size_t at) {
  if (at >= code.size())
    return std::nullopt;
  const unsigned mod = code[at] >> 6;
  const unsigned rm = code[at] & 7;
  if (mod == 3)
    return 1;
  std::size_t length = 1;
  if (rm == 4) { // SIB
    if (at + 1 >= code.size())
      return std::nullopt;
    ++length;
    if (mod == 0 && (code[at + 1] & 7) == 5) // no base: disp32
      length += 4;
  } else if (mod == 0 && rm == 5) { // RIP-relative disp32
    length += 4;
  }
  if (mod == 1)
    length += 1;
  else if (mod == 2)
    length += 4;
  return length;
}

std::string hex_bytes(Code bytes) {
  std::string text;
  for (const auto byte : bytes) {
    char hex[8];
    std::snprintf(hex, sizeof hex, " 0x%02x", static_cast<unsigned>(byte));
    text += hex;
  }
  return text;
}

EntryInstruction unreadable() { return {"unreadable", false}; }

} // namespace

EntryInstruction classify_entry_instruction(Code code) {
  // endbr64 (f3 0f 1e fa) is single-stepped. Checked first: its f3 is not a plain prefix here.
  if (code.size() < kEndbr64.size() && std::equal(code.begin(), code.end(), kEndbr64.begin()))
    return unreadable(); // empty, or the start of an endbr64
  if (std::equal(kEndbr64.begin(), kEndbr64.end(), code.begin()))
    return {"endbr64", false};

  std::size_t at = 0;
  std::size_t legacy_prefixes = 0;
  bool operand_size = false; // 0x66
  bool rep = false;          // 0xf3
  while (at < code.size() && is_legacy_prefix(code[at])) {
    operand_size |= code[at] == 0x66;
    rep |= code[at] == 0xf3;
    ++legacy_prefixes;
    ++at;
  }
  std::optional<std::uint8_t> rex;
  if (at < code.size() && (code[at] & 0xf0) == 0x40)
    rex = code[at++];
  if (at >= code.size())
    return unreadable();
  const bool rex_w = rex && (*rex & 0x8) != 0;
  const bool rex_b = rex && (*rex & 0x1) != 0;
  const std::uint8_t op = code[at];
  const bool two_byte = op == 0x0f;
  if (two_byte && at + 1 >= code.size())
    return unreadable();
  const std::uint8_t op2 = two_byte ? code[at + 1] : 0;
  // The ModRM byte follows the opcode.
  const std::size_t modrm_at = at + (two_byte ? 2 : 1);
  const auto reg_field = [&]() -> std::optional<unsigned> {
    if (modrm_at >= code.size())
      return std::nullopt;
    return (code[modrm_at] >> 3) & 7;
  };
  // The instruction when the code holds all of its `length` bytes.
  const auto whole = [&](std::string text, bool emulated, std::size_t length) {
    return length <= code.size() ? EntryInstruction{std::move(text), emulated} : unreadable();
  };
  // An instruction with a ModRM operand and `immediate` bytes after it.
  const auto with_modrm = [&](std::string text, bool emulated, std::size_t immediate) {
    const auto modrm = modrm_length(code, modrm_at);
    return modrm ? whole(std::move(text), emulated, modrm_at + *modrm + immediate) : unreadable();
  };
  const std::size_t imm16_32 = operand_size ? 2 : 4;

  // What the kernel emulates.
  if (op >= 0x50 && op <= 0x57) {
    // push %reg: emulated alone or with the one REX prefix 0x41 (%r8-%r15), nothing else.
    const unsigned reg = op - 0x50u;
    const std::string name = rex_b ? "r" + std::to_string(8 + reg) : std::string(kRegisters[reg]);
    if (legacy_prefixes == 0)
      return whole("push %" + name, !rex || *rex == 0x41, at + 1);
  }
  // Branches: a 0x66 prefix (16-bit target) makes the kernel refuse the probe.
  const std::string_view refused = operand_size ? " with 0x66 prefix" : "";
  if (op == 0xeb)
    return whole("jmp rel8" + std::string(refused), !operand_size, at + 2);
  if (op == 0xe9)
    return whole("jmp rel32" + std::string(refused), !operand_size, at + 1 + imm16_32);
  if (op == 0xe8)
    return whole("call rel32" + std::string(refused), !operand_size, at + 1 + imm16_32);
  if (op >= 0x70 && op <= 0x7f)
    return whole("jcc rel8" + std::string(refused), !operand_size, at + 2);
  if (two_byte && op2 >= 0x80 && op2 <= 0x8f)
    return whole("jcc rel32" + std::string(refused), !operand_size, at + 2 + imm16_32);
  if (op == 0x90 && !rex_b) // 41 90 is xchg %eax,%r8d
    return whole(rep ? "pause" : "nop", true, at + 1);
  if (two_byte && op2 == 0x1f) {
    const auto reg = reg_field();
    if (!reg)
      return unreadable();
    if (*reg == 0)
      return with_modrm("nop", true, 0);
  }

  // Common single-stepped entries (the name only: decoding stops at what the kernel does).
  if (!two_byte) {
    if (op < 0x40 && (op & 7) <= 3) // add/or/adc/sbb/and/sub/xor/cmp r/m, r and r, r/m
      return with_modrm(std::string(kAluNames[op >> 3]), false, 0);
    if (op == 0x80 || op == 0x81 || op == 0x83) {
      const auto reg = reg_field();
      if (!reg)
        return unreadable();
      return with_modrm(std::string(kAluNames[*reg]), false, op == 0x81 ? imm16_32 : 1);
    }
    if (op == 0x84 || op == 0x85)
      return with_modrm("test", false, 0);
    if (op >= 0x88 && op <= 0x8b)
      return with_modrm("mov", false, 0);
    if (op == 0x8d)
      return with_modrm("lea", false, 0);
    if (op >= 0xb8 && op <= 0xbf)
      return whole("mov", false, at + 1 + (rex_w ? 8 : imm16_32));
    if (op == 0xc7 && reg_field() == 0u)
      return with_modrm("mov", false, imm16_32);
    if (op == 0xc3)
      return whole("ret", false, at + 1);
    if (op == 0xff) {
      const auto reg = reg_field();
      if (!reg)
        return unreadable();
      if (*reg == 2)
        return with_modrm("call indirect", false, 0);
      if (*reg == 4)
        return with_modrm("jmp indirect", false, 0);
      if (*reg == 6)
        return with_modrm("push", false, 0);
    }
  }
  // Anything else: its prefixes and opcode bytes.
  return {"other" + hex_bytes(code.first(modrm_at)), false};
}

std::optional<std::array<std::uint8_t, kEntryBytes>> read_entry_bytes(int fd,
                                                                      std::uint64_t file_offset) {
  if (file_offset > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max() - kEntryBytes))
    return std::nullopt;
  std::array<std::uint8_t, kEntryBytes> bytes{};
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::pread(fd, bytes.data() + done, bytes.size() - done,
                                static_cast<off_t>(file_offset + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0) // error, or the end of the file
      return std::nullopt;
    done += static_cast<std::size_t>(got);
  }
  return bytes;
}

} // namespace neutracer
