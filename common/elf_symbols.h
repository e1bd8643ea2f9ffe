// SPDX-License-Identifier: Apache-2.0
#pragma once
// Finds symbols in an ELF file: where exported functions live as uprobe file offsets, and the
// link-time addresses of any defined symbol (data included) for reading a process's memory.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace neutracer {

struct SymbolOffsets {
  std::map<std::string, std::uint64_t> found; // symbol -> file offset
  std::vector<std::string> missing;           // asked for, not defined in the file
  std::string error;                          // non-empty when the file could not be read
};

// Looks the names up in .dynsym (then .symtab) of the ELF file at `path`.
SymbolOffsets find_symbol_offsets(const std::string &path, const std::vector<std::string> &names);

struct SymbolValue {
  std::uint64_t value = 0; // st_value: the link-time virtual address
  std::uint64_t size = 0;
};

struct SymbolValues {
  std::map<std::string, SymbolValue> found; // defined symbols (functions, data) asked for
  // The lowest PT_LOAD p_vaddr, rounded down to its alignment: a mapping of file offset 0 at
  // address A means the file was loaded with bias A - first_load_address (0 for ET_EXEC).
  std::uint64_t first_load_address = 0;
  std::string error; // non-empty when the file could not be read
};

// Looks the names up in .dynsym (then .symtab): any defined symbol with a non-zero value.
SymbolValues find_symbol_values(const std::string &path, const std::vector<std::string> &names);

} // namespace neutracer
