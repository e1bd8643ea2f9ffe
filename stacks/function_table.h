// SPDX-License-Identifier: Apache-2.0
#pragma once
// The function symbols of one ELF file (.dynsym and .symtab), sorted by address, to name the
// function that holds an address of that file.
#include <cstdint>
#include <optional>
#include <vector>

#include "common/elf_file.h"

namespace neutracer {

class FunctionTable {
public:
  // Reads the symbols of `file`, which the table keeps open (names point into it). nullopt when
  // the file has more than `max_symbols` functions: the caller then names no function in it.
  static std::optional<FunctionTable> load(ElfFile file, std::size_t max_symbols);

  struct Function {
    const char *name = nullptr; // as in the file (mangled)
    std::uint64_t offset = 0;   // of the address from the function's start
  };
  // The function holding the code at `file_offset`; nullopt outside every function (a gap of a
  // stripped file's local functions, or not code).
  std::optional<Function> find(std::uint64_t file_offset) const;

  std::size_t size() const { return symbols_.size(); }
  const ElfFile &file() const { return file_; }

private:
  struct Symbol {
    std::uint64_t address = 0;
    std::uint64_t size = 0; // 0: unknown (assembly); the symbol then reaches the next one
    const char *name = nullptr;
  };
  explicit FunctionTable(ElfFile file) : file_(std::move(file)) {}

  ElfFile file_;
  std::vector<Symbol> symbols_; // by address, one per address
};

} // namespace neutracer
