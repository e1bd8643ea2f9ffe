#include "common/elf_symbols.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.h"

namespace neutracer {
namespace {

struct ElfCloser {
  void operator()(Elf *elf) const { elf_end(elf); }
};

// Uprobes take file offsets: translate a virtual address through the PT_LOAD segment holding it.
// Only the segment's bytes in the file count (p_filesz, not p_memsz), and the result must lie
// inside the file: header fields are the file's to choose, and a symbol in a segment's
// zero-filled tail or past the end of the file has no instruction to probe.
std::optional<std::uint64_t> file_offset(Elf *elf, std::uint64_t address, std::uint64_t file_size) {
  std::size_t count = 0;
  if (elf_getphdrnum(elf, &count) != 0)
    return std::nullopt;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Phdr phdr;
    if (!gelf_getphdr(elf, static_cast<int>(i), &phdr) || phdr.p_type != PT_LOAD ||
        !(phdr.p_flags & PF_X))
      continue;
    if (address < phdr.p_vaddr || address - phdr.p_vaddr >= phdr.p_filesz)
      continue;
    const std::uint64_t into_segment = address - phdr.p_vaddr;
    if (phdr.p_offset >= file_size || into_segment >= file_size - phdr.p_offset)
      continue; // no overflow: both sides stay below file_size
    return phdr.p_offset + into_segment;
  }
  return std::nullopt;
}

} // namespace

SymbolOffsets find_symbol_offsets(const std::string &path, const std::vector<std::string> &names) {
  SymbolOffsets result;
  std::set<std::string> wanted(names.begin(), names.end());
  if (elf_version(EV_CURRENT) == EV_NONE) {
    result.error = "libelf initialisation failed";
    return result;
  }
  // O_NONBLOCK and a regular file only: the path comes from another user's process maps, and
  // a FIFO put there before this open would block the main loop for good.
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) {
    result.error = "cannot open " + path + ": " + std::strerror(errno);
    return result;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    result.error = path + " is not a regular file";
    return result;
  }
  std::unique_ptr<Elf, ElfCloser> elf(elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) {
    result.error = path + " is not an ELF file";
    return result;
  }
  for (const Elf64_Word section_type : {SHT_DYNSYM, SHT_SYMTAB}) {
    for (Elf_Scn *scn = elf_nextscn(elf.get(), nullptr); scn; scn = elf_nextscn(elf.get(), scn)) {
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
            GELF_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0)
          continue;
        const char *name = elf_strptr(elf.get(), shdr.sh_link, sym.st_name);
        if (!name || !wanted.contains(name) || result.found.contains(name))
          continue;
        if (const auto offset =
                file_offset(elf.get(), sym.st_value, static_cast<std::uint64_t>(info.st_size)))
          result.found.emplace(name, *offset);
      }
    }
  }
  for (const auto &name : names)
    if (!result.found.contains(name))
      result.missing.push_back(name);
  return result;
}

} // namespace neutracer
