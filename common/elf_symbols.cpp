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

// An ELF file opened for reading, or why it could not be.
struct OpenedElf {
  UniqueFd fd;
  std::unique_ptr<Elf, ElfCloser> elf;
  std::uint64_t file_size = 0;
  std::string error;
};

OpenedElf open_elf(const std::string &path) {
  OpenedElf opened;
  if (elf_version(EV_CURRENT) == EV_NONE) {
    opened.error = "libelf initialisation failed";
    return opened;
  }
  // O_NONBLOCK and a regular file only: the path comes from another user's process maps, and
  // a FIFO put there before this open would block the main loop for good.
  opened.fd = UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!opened.fd) {
    opened.error = "cannot open " + path + ": " + std::strerror(errno);
    return opened;
  }
  struct stat info {};
  if (::fstat(opened.fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    opened.error = path + " is not a regular file";
    return opened;
  }
  opened.file_size = static_cast<std::uint64_t>(info.st_size);
  opened.elf.reset(elf_begin(opened.fd.get(), ELF_C_READ_MMAP, nullptr));
  if (!opened.elf || elf_kind(opened.elf.get()) != ELF_K_ELF) {
    opened.elf.reset();
    opened.error = path + " is not an ELF file";
  }
  return opened;
}

// Calls `each(name, sym)` for the defined symbols of .dynsym, then of .symtab, whose name is
// in `wanted`.
template <typename Each>
void for_each_wanted_symbol(Elf *elf, const std::set<std::string> &wanted, Each each) {
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
        if (name && wanted.contains(name))
          each(std::string(name), sym);
      }
    }
  }
}

} // namespace

SymbolOffsets find_symbol_offsets(const std::string &path, const std::vector<std::string> &names) {
  SymbolOffsets result;
  OpenedElf opened = open_elf(path);
  if (!opened.elf) {
    result.error = opened.error;
    return result;
  }
  const std::set<std::string> wanted(names.begin(), names.end());
  for_each_wanted_symbol(
      opened.elf.get(), wanted, [&](const std::string &name, const GElf_Sym &sym) {
        if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || result.found.contains(name))
          return;
        if (const auto offset = file_offset(opened.elf.get(), sym.st_value, opened.file_size))
          result.found.emplace(name, *offset);
      });
  for (const auto &name : names)
    if (!result.found.contains(name))
      result.missing.push_back(name);
  return result;
}

SymbolValues find_symbol_values(const std::string &path, const std::vector<std::string> &names) {
  SymbolValues result;
  OpenedElf opened = open_elf(path);
  if (!opened.elf) {
    result.error = opened.error;
    return result;
  }
  std::size_t count = 0;
  if (elf_getphdrnum(opened.elf.get(), &count) != 0) {
    result.error = path + " has no program headers";
    return result;
  }
  bool loadable = false;
  for (std::size_t i = 0; i < count; ++i) {
    GElf_Phdr phdr;
    if (!gelf_getphdr(opened.elf.get(), static_cast<int>(i), &phdr) || phdr.p_type != PT_LOAD)
      continue;
    // Only a power-of-two alignment rounds; the loader maps whole pages either way.
    const std::uint64_t align =
        phdr.p_align > 1 && (phdr.p_align & (phdr.p_align - 1)) == 0 ? phdr.p_align : 1;
    const std::uint64_t start = phdr.p_vaddr & ~(align - 1);
    if (!loadable || start < result.first_load_address)
      result.first_load_address = start;
    loadable = true;
  }
  if (!loadable) {
    result.error = path + " has no loadable segment";
    return result;
  }
  const std::set<std::string> wanted(names.begin(), names.end());
  for_each_wanted_symbol(
      opened.elf.get(), wanted, [&](const std::string &name, const GElf_Sym &sym) {
        const int type = GELF_ST_TYPE(sym.st_info);
        if (type == STT_SECTION || type == STT_FILE || result.found.contains(name))
          return;
        result.found.emplace(name, SymbolValue{sym.st_value, sym.st_size});
      });
  return result;
}

} // namespace neutracer
