#include "common/elf_symbols.h"

#include <set>

#include "common/elf_file.h"

namespace neutracer {

SymbolOffsets find_symbol_offsets(const std::string &path, const std::vector<std::string> &names) {
  SymbolOffsets result;
  const std::set<std::string> wanted(names.begin(), names.end());
  const auto file = ElfFile::open(path, result.error);
  if (!file)
    return result;
  file->for_each_function([&](const char *name, std::uint64_t address, std::uint64_t) {
    if (!wanted.contains(name) || result.found.contains(name))
      return;
    if (const auto offset = file->file_offset(address))
      result.found.emplace(name, *offset);
  });
  for (const auto &name : names)
    if (!result.found.contains(name))
      result.missing.push_back(name);
  return result;
}

} // namespace neutracer
