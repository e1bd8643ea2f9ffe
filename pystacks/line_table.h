// SPDX-License-Identifier: Apache-2.0
#pragma once
// Line numbers of CPython bytecode: the line of an instruction, decoded from a code object's
// line table. Pure: the bytes come from wherever the caller read them (docs/python-frames.md).
#include <cstdint>
#include <optional>
#include <span>

namespace neutracer {

// How a CPython version encodes instruction offset -> line.
enum class LineTableFormat {
  // 3.9 co_lnotab: (bytecode delta, signed line delta) byte pairs, applied while the
  // accumulated offset stays at or below the instruction's.
  kLnotab,
  // 3.10 co_linetable: (bytecode delta, signed line delta) byte pairs, each a range of the
  // bytecode; a line delta of -128 marks a range without a line.
  kLinetable310,
  // 3.11+ co_linetable ("location table"): entries of 1-8 code units whose first byte has the
  // top bit set, a 4-bit code saying how the line delta (and columns) follow.
  kLocations311,
};

// The line of the instruction `byte_offset` bytes into the code (3.9: f_lasti; 3.10: f_lasti * 2;
// 3.11+: (instruction pointer - first code unit) in bytes), starting from `first_line`
// (co_firstlineno). A negative offset (a frame that has not started) gives `first_line`.
// nullopt when the table gives the instruction no line, the offset lies past the table, or the
// table is malformed (truncated entries, impossible line numbers): the caller shows the frame
// without a line rather than a wrong one.
std::optional<int> line_for_offset(LineTableFormat format, std::span<const std::uint8_t> table,
                                   int first_line, std::int64_t byte_offset);

} // namespace neutracer
