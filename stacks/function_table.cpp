// SPDX-License-Identifier: Apache-2.0
#include "stacks/function_table.h"

#include <algorithm>

namespace neutracer {

std::optional<FunctionTable> FunctionTable::load(ElfFile file, std::size_t max_symbols) {
  FunctionTable table(std::move(file));
  bool too_many = false;
  table.file_.for_each_function([&](const char *name, std::uint64_t address, std::uint64_t size) {
    if (table.symbols_.size() >= max_symbols) {
      too_many = true;
      return;
    }
    table.symbols_.push_back({address, size, name});
  });
  if (too_many)
    return std::nullopt;
  // One symbol per address: the one with a size (an alias without one says less), then the
  // first read (.dynsym's exported name before .symtab's local ones).
  std::stable_sort(table.symbols_.begin(), table.symbols_.end(),
                   [](const Symbol &a, const Symbol &b) {
                     return a.address != b.address ? a.address < b.address : a.size > b.size;
                   });
  table.symbols_.erase(
      std::unique(table.symbols_.begin(), table.symbols_.end(),
                  [](const Symbol &a, const Symbol &b) { return a.address == b.address; }),
      table.symbols_.end());
  table.symbols_.shrink_to_fit();
  return table;
}

std::optional<FunctionTable::Function> FunctionTable::find(std::uint64_t file_offset) const {
  const auto address = file_.address_at(file_offset);
  if (!address)
    return std::nullopt;
  auto it =
      std::upper_bound(symbols_.begin(), symbols_.end(), *address,
                       [](std::uint64_t a, const Symbol &symbol) { return a < symbol.address; });
  if (it == symbols_.begin())
    return std::nullopt;
  --it;
  const std::uint64_t offset = *address - it->address;
  if (it->size != 0 && offset >= it->size)
    return std::nullopt;
  return Function{it->name, offset};
}

} // namespace neutracer
