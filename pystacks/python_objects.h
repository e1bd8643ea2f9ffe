// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reads CPython str, bytes and code objects out of another process's memory. Everything read
// is untrusted: lengths are bounded, types checked where the interpreter's type objects are
// known, and anything that does not fit gives nullopt, never a crash or a huge allocation.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pystacks/process_memory.h"
#include "pystacks/python_offsets.h"

namespace neutracer {

// Longest str read (PATH_MAX: file names are the longest a frame shows).
constexpr std::int64_t kMaxPythonStringChars = 4096;
// Longest line table read. A location table takes a few bytes per instruction: this holds
// functions of tens of thousands of instructions.
constexpr std::int64_t kMaxLineTableBytes = 256 * 1024;

// Addresses of the interpreter's type objects (PyCode_Type, ...) in the process, 0 when the
// interpreter file did not export them: an object whose ob_type differs is not read.
struct PythonTypeAddresses {
  std::uint64_t code = 0;
  std::uint64_t unicode = 0;
  std::uint64_t bytes = 0;
};

// A compact str (every str CPython makes for code objects) as UTF-8; non-ASCII characters of
// the 1-, 2- and 4-byte kinds are encoded, invalid code points become U+FFFD.
std::optional<std::string> read_python_str(const ProcessMemory &memory,
                                           const PythonOffsets &offsets,
                                           const PythonTypeAddresses &types, std::uint64_t address);

std::optional<std::vector<std::uint8_t>>
read_python_bytes(const ProcessMemory &memory, const PythonOffsets &offsets,
                  const PythonTypeAddresses &types, std::uint64_t address, std::int64_t max_size);

// The fields of a code object a frame shows, as pointers: cheap to read and compare, so a
// cached code object can be checked against the one now at its address.
struct PythonCodeHeader {
  std::uint64_t type = 0;
  std::uint64_t filename = 0;
  std::uint64_t name = 0; // co_qualname where the version has it, else co_name
  std::uint64_t line_table = 0;
  std::int32_t first_line = 0;
  bool operator==(const PythonCodeHeader &) const = default;
};

std::optional<PythonCodeHeader> read_python_code_header(const ProcessMemory &memory,
                                                        const PythonOffsets &offsets,
                                                        const PythonTypeAddresses &types,
                                                        std::uint64_t address);

// A code object's strings and line table.
struct PythonCode {
  PythonCodeHeader header;
  std::string filename;
  std::string name;
  std::vector<std::uint8_t> line_table;
};

std::optional<PythonCode> read_python_code(const ProcessMemory &memory,
                                           const PythonOffsets &offsets,
                                           const PythonTypeAddresses &types, std::uint64_t address);

} // namespace neutracer
