#pragma once
// Finds where exported functions live in a shared library file, as uprobe file offsets.
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

} // namespace neutracer
