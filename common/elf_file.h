// SPDX-License-Identifier: Apache-2.0
#pragma once
// One ELF file opened for reading its symbols and program headers: what the uprobe offset and
// symbol value lookups (elf_symbols.h) and native stack symbolisation (stacks/) read. Paths come from other
// users' processes, so opening never blocks and accepts only regular files.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/unique_fd.h"

struct Elf;

namespace neutracer {

class ElfFile {
public:
  // nullopt, with `error` saying why, when `path` is not a readable regular ELF file.
  static std::optional<ElfFile> open(const std::string &path, std::string &error);

  ElfFile(ElfFile &&) noexcept;
  ElfFile &operator=(ElfFile &&) noexcept;
  ~ElfFile();

  std::uint64_t size() const { return size_; }
  std::uint64_t device() const { return device_; }
  std::uint64_t inode() const { return inode_; }

  // A defined symbol with a non-zero value. `name` lives as long as this file.
  struct Symbol {
    const char *name = nullptr;
    std::uint64_t value = 0; // st_value: the link-time virtual address
    std::uint64_t size = 0;
    bool function = false;        // STT_FUNC
    bool section_or_file = false; // STT_SECTION or STT_FILE: not a thing to read or probe
  };

  // Calls `fn` for each defined, non-zero symbol of .dynsym, then of .symtab (a symbol in both
  // comes twice).
  void for_each_symbol(const std::function<void(const Symbol &)> &fn) const;
  // The same, functions only: `fn(name, address, size)`.
  void for_each_function(const std::function<void(const char *name, std::uint64_t address,
                                                  std::uint64_t size)> &fn) const;

  // A virtual address in an executable PT_LOAD segment -> its offset in the file, where it lies
  // in the segment's file bytes and inside the file; nullopt otherwise.
  std::optional<std::uint64_t> file_offset(std::uint64_t address) const;
  // The inverse, for an offset inside an executable segment's file bytes.
  std::optional<std::uint64_t> address_at(std::uint64_t file_offset) const;

  // The lowest PT_LOAD p_vaddr, rounded down to its alignment: a mapping of file offset 0 at
  // address A means the file was loaded with bias A - first_load_address (0 for ET_EXEC).
  // nullopt when the file has no loadable segment.
  std::optional<std::uint64_t> first_load_address() const;

  // The GNU build id (.note.gnu.build-id) in lowercase hex; empty when the file has none.
  std::string build_id() const;

private:
  struct ElfCloser {
    void operator()(Elf *elf) const;
  };
  ElfFile() = default;

  UniqueFd fd_;
  std::unique_ptr<Elf, ElfCloser> elf_;
  std::uint64_t size_ = 0;
  std::uint64_t device_ = 0;
  std::uint64_t inode_ = 0;
};

} // namespace neutracer
