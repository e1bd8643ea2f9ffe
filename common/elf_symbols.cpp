// SPDX-License-Identifier: Apache-2.0
#include "common/elf_symbols.h"

#include <set>

#include "common/elf_file.h"

namespace neutracer {

SymbolOffsets find_symbol_offsets(const std::string &path, const std::vector<std::string> &names) {
  SymbolOffsets result;
  const auto file = ElfFile::open(path, result.error);
  if (!file)
    return result;
  const std::set<std::string, std::less<>> wanted(names.begin(), names.end());
  file->for_each_function([&](const char *name, std::uint64_t address, std::uint64_t) {
    if (!wanted.contains(std::string_view(name)) || result.found.contains(name))
      return;
    // A symbol in a segment's zero-filled tail or past the end of the file has no instruction
    // to probe: it is left missing.
    if (const auto offset = file->file_offset(address))
      result.found.emplace(name, *offset);
  });
  for (const auto &name : names)
    if (!result.found.contains(name))
      result.missing.push_back(name);
  return result;
}

SymbolValues find_symbol_values(const std::string &path, const std::vector<std::string> &names) {
  SymbolValues result;
  const auto file = ElfFile::open(path, result.error);
  if (!file)
    return result;
  const auto first_load = file->first_load_address();
  if (!first_load) {
    result.error = path + " has no loadable segment";
    return result;
  }
  result.first_load_address = *first_load;
  const std::set<std::string, std::less<>> wanted(names.begin(), names.end());
  file->for_each_symbol([&](const ElfFile::Symbol &symbol) {
    if (symbol.section_or_file || !wanted.contains(std::string_view(symbol.name)) ||
        result.found.contains(symbol.name))
      return;
    result.found.emplace(symbol.name, SymbolValue{symbol.value, symbol.size});
  });
  return result;
}

} // namespace neutracer
