// SPDX-License-Identifier: Apache-2.0
#include "common/elf_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>

namespace neutracer {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// The build id in one block of notes; empty when none is there.
std::string build_id_in_notes(Elf_Data *data) {
  if (!data)
    return {};
  GElf_Nhdr header;
  std::size_t name_at = 0, desc_at = 0;
  for (std::size_t offset = 0;
       (offset = gelf_getnote(data, offset, &header, &name_at, &desc_at)) > 0;) {
    const auto *bytes = static_cast<const unsigned char *>(data->d_buf);
    if (header.n_type != NT_GNU_BUILD_ID || header.n_namesz != 4 ||
        std::memcmp(bytes + name_at, "GNU", 4) != 0 || header.n_descsz == 0 ||
        desc_at + header.n_descsz > data->d_size)
      continue;
    std::string hex;
    for (std::size_t i = 0; i < header.n_descsz; ++i) {
      hex += kHex[bytes[desc_at + i] >> 4];
      hex += kHex[bytes[desc_at + i] & 15];
    }
    return hex;
  }
  return {};
}

} // namespace

void ElfFile::ElfCloser::operator()(Elf *elf) const { elf_end(elf); }

ElfFile::ElfFile(ElfFile &&) noexcept = default;
ElfFile &ElfFile::operator=(ElfFile &&) noexcept = default;
ElfFile::~ElfFile() = default;

std::optional<ElfFile> ElfFile::open(const std::string &path, std::string &error) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    error = "libelf initialisation failed";
    return std::nullopt;
  }
  ElfFile file;
  // O_NONBLOCK and a regular file only: the path comes from another user's process maps, and
  // a FIFO put there before this open would block the main loop for good.
  file.fd_ = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!file.fd_) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat info {};
  if (::fstat(file.fd_.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    error = path + " is not a regular file";
    return std::nullopt;
  }
  file.size_ = static_cast<std::uint64_t>(info.st_size);
  file.device_ = info.st_dev;
  file.inode_ = info.st_ino;
  file.elf_.reset(elf_begin(file.fd_.get(), ELF_C_READ_MMAP, nullptr));
  if (!file.elf_ || elf_kind(file.elf_.get()) != ELF_K_ELF) {
    error = path + " is not an ELF file";
    return std::nullopt;
  }
  return file;
}

void ElfFile::for_each_symbol(const std::function<void(const Symbol &)> &fn) const {
  Elf *elf = elf_.get();
  for (const Elf64_Word section_type : {SHT_DYNSYM, SHT_SYMTAB}) {
    for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != section_type || shdr.sh_entsize == 0)
        continue;
      Elf_Data *data = elf_getdata(scn, nullptr);
      if (!data)
        continue;
      const std::size_t symbols = shdr.sh_size / shdr.sh_entsize;
      for (std::size_t i = 0; i < symbols; ++i) {
        GElf_Sym sym;
        if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF ||
            sym.st_value == 0)
          continue;
        const char *name = elf_strptr(elf, shdr.sh_link, sym.st_name);
        if (!name)
          continue;
        const int type = GELF_ST_TYPE(sym.st_info);
        fn(Symbol{name, sym.st_value, sym.st_size, type == STT_FUNC,
                  type == STT_SECTION || type == STT_FILE});
      }
    }
  }
}

void ElfFile::for_each_function(
    const std::function<void(const char *, std::uint64_t, std::uint64_t)> &fn) const {
  for_each_symbol([&](const Symbol &symbol) {
    if (symbol.function)
      fn(symbol.name, symbol.value, symbol.size);
  });
}

std::optional<std::uint64_t> ElfFile::first_load_address() const {
  std::size_t count = 0;
  if (elf_getphdrnum(elf_.get(), &count) != 0)
    return std::nullopt;
  std::optional<std::uint64_t> lowest;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Phdr phdr;
    if (!gelf_getphdr(elf_.get(), static_cast<int>(i), &phdr) || phdr.p_type != PT_LOAD)
      continue;
    // Only a power-of-two alignment rounds; the loader maps whole pages either way.
    const std::uint64_t align =
        phdr.p_align > 1 && (phdr.p_align & (phdr.p_align - 1)) == 0 ? phdr.p_align : 1;
    const std::uint64_t start = phdr.p_vaddr & ~(align - 1);
    if (!lowest || start < *lowest)
      lowest = start;
  }
  return lowest;
}

namespace {

// The first value `visit` gives for an executable PT_LOAD segment, in program header order.
template <typename Visit>
std::optional<std::uint64_t> first_in_executable_segments(Elf *elf, Visit visit) {
  std::size_t count = 0;
  if (elf_getphdrnum(elf, &count) != 0)
    return std::nullopt;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Phdr phdr;
    if (!gelf_getphdr(elf, static_cast<int>(i), &phdr) || phdr.p_type != PT_LOAD ||
        !(phdr.p_flags & PF_X))
      continue;
    if (const auto value = visit(phdr))
      return value;
  }
  return std::nullopt;
}

} // namespace

// Uprobes take file offsets, stacks hold addresses: both go through the executable PT_LOAD
// segment that holds them. Only the segment's bytes in the file count (p_filesz, not p_memsz),
// and the result must lie inside the file: header fields are the file's to choose.
std::optional<std::uint64_t> ElfFile::file_offset(std::uint64_t address) const {
  return first_in_executable_segments(
      elf_.get(), [&](const GElf_Phdr &phdr) -> std::optional<std::uint64_t> {
        if (address < phdr.p_vaddr || address - phdr.p_vaddr >= phdr.p_filesz)
          return std::nullopt;
        const std::uint64_t into_segment = address - phdr.p_vaddr;
        if (phdr.p_offset >= size_ || into_segment >= size_ - phdr.p_offset)
          return std::nullopt; // no overflow: both sides stay below size_
        return phdr.p_offset + into_segment;
      });
}

std::optional<std::uint64_t> ElfFile::address_at(std::uint64_t offset) const {
  if (offset >= size_)
    return std::nullopt;
  return first_in_executable_segments(
      elf_.get(), [&](const GElf_Phdr &phdr) -> std::optional<std::uint64_t> {
        if (offset < phdr.p_offset || offset - phdr.p_offset >= phdr.p_filesz)
          return std::nullopt;
        return phdr.p_vaddr + (offset - phdr.p_offset);
      });
}

std::string ElfFile::build_id() const {
  Elf *elf = elf_.get();
  for (Elf_Scn *scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_NOTE)
      if (auto id = build_id_in_notes(elf_getdata(scn, nullptr)); !id.empty())
        return id;
  }
  // Section headers may be stripped; the note segment is what the loader maps.
  std::size_t count = 0;
  if (elf_getphdrnum(elf, &count) != 0)
    return {};
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Phdr phdr;
    if (!gelf_getphdr(elf, static_cast<int>(i), &phdr) || phdr.p_type != PT_NOTE ||
        phdr.p_offset >= size_ || phdr.p_filesz > size_ - phdr.p_offset)
      continue;
    if (auto id = build_id_in_notes(elf_getdata_rawchunk(elf, static_cast<off_t>(phdr.p_offset),
                                                         phdr.p_filesz, ELF_T_NHDR));
        !id.empty())
      return id;
  }
  return {};
}

} // namespace neutracer
