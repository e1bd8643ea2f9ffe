// SPDX-License-Identifier: Apache-2.0
#include "allocator/usdt_notes.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <gelf.h>
#include <iterator>
#include <libelf.h>
#include <memory>
#include <optional>
#include <string_view>
#include <sys/stat.h>
#include <utility>

#include "common/unique_fd.h"

namespace neutracer {
namespace {

constexpr std::string_view kStapsdtOwner = "stapsdt";
constexpr std::uint32_t kNtStapsdt = 3;
constexpr std::string_view kStapsdtSection = ".note.stapsdt";
constexpr std::size_t kNoteHeaderBytes = 12;     // namesz, descsz, type
constexpr std::size_t kStapsdtAddressBytes = 24; // pc, base, semaphore

// Little-endian by construction, whatever the host's byte order.
std::uint64_t read_le(std::span<const std::byte> bytes, std::size_t at, std::size_t width) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < width; ++i)
    value |= static_cast<std::uint64_t>(bytes[at + i]) << (8 * i);
  return value;
}

std::uint64_t align4(std::uint64_t offset) { return (offset + 3) & ~std::uint64_t{3}; }

// The NUL-terminated string starting at `at` in `text`, advancing `at` past its NUL; nullopt
// when no NUL follows inside `text`.
std::optional<std::string> take_string(std::string_view text, std::size_t &at) {
  const std::size_t end = text.find('\0', at);
  if (end == std::string_view::npos)
    return std::nullopt;
  std::string value(text.substr(at, end - at));
  at = end + 1;
  return value;
}

// One stapsdt note's description; nullopt when it is too short or a string lacks its NUL.
std::optional<UsdtProbe> parse_stapsdt_desc(std::span<const std::byte> desc) {
  if (desc.size() < kStapsdtAddressBytes)
    return std::nullopt;
  UsdtProbe probe;
  probe.address = read_le(desc, 0, 8);
  probe.base = read_le(desc, 8, 8);
  probe.semaphore = read_le(desc, 16, 8);
  const auto strings = desc.subspan(kStapsdtAddressBytes);
  const std::string_view text(reinterpret_cast<const char *>(strings.data()), strings.size());
  std::size_t at = 0;
  auto provider = take_string(text, at);
  auto name = provider ? take_string(text, at) : std::nullopt;
  auto arguments = name ? take_string(text, at) : std::nullopt;
  if (!arguments || provider->empty() || name->empty())
    return std::nullopt;
  probe.provider = std::move(*provider);
  probe.name = std::move(*name);
  probe.arguments = std::move(*arguments);
  return probe;
}

struct ElfCloser {
  void operator()(Elf *elf) const { elf_end(elf); }
};
using UniqueElf = std::unique_ptr<Elf, ElfCloser>;

std::string elf_error() {
  const char *message = elf_errmsg(-1);
  return message ? message : "unknown libelf error";
}

} // namespace

std::size_t UsdtProbe::argument_count() const {
  std::size_t count = 0;
  bool in_spec = false;
  for (const char c : arguments) {
    if (c == ' ') {
      in_spec = false;
    } else if (!in_spec) {
      in_spec = true;
      ++count;
    }
  }
  return count;
}

UsdtNotes parse_stapsdt_notes(std::span<const std::byte> section) {
  UsdtNotes notes;
  std::uint64_t offset = 0;
  while (offset < section.size()) {
    // The section is stapsdt's: bytes left that cannot hold a note are one that was cut short.
    if (section.size() - offset < kNoteHeaderBytes) {
      ++notes.malformed;
      break;
    }
    const std::uint64_t name_size = read_le(section, offset, 4);
    const std::uint64_t desc_size = read_le(section, offset + 4, 4);
    const std::uint64_t type = read_le(section, offset + 8, 4);
    const std::uint64_t name_at = offset + kNoteHeaderBytes;
    const std::uint64_t desc_at = align4(name_at + name_size);
    const std::uint64_t desc_end = desc_at + desc_size; // no overflow: sizes are 32-bit
    if (name_at + name_size > section.size()) {
      ++notes.malformed; // the owner is unreadable; in this section it is stapsdt's
      break;
    }
    std::string_view owner(reinterpret_cast<const char *>(section.data() + name_at), name_size);
    if (!owner.empty() && owner.back() == '\0')
      owner.remove_suffix(1);
    const bool stapsdt = owner == kStapsdtOwner;
    if (desc_end > section.size()) {
      if (stapsdt)
        ++notes.malformed;
      break; // where the next note starts is unknown
    }
    if (stapsdt && type == kNtStapsdt) {
      if (auto probe = parse_stapsdt_desc(section.subspan(desc_at, desc_size)))
        notes.probes.push_back(std::move(*probe));
      else
        ++notes.malformed;
    }
    offset = align4(desc_end); // the last note's padding may be missing
  }
  return notes;
}

UsdtNotes read_usdt_notes(const std::string &path) {
  UsdtNotes notes;
  if (elf_version(EV_CURRENT) == EV_NONE) {
    notes.error = "libelf initialisation failed";
    return notes;
  }
  // O_NONBLOCK and a regular file only, as in common/elf_file.cpp: the path may come from
  // another process's maps, and a FIFO there would block the caller.
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) {
    notes.error = "cannot open " + path + ": " + std::strerror(errno);
    return notes;
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    notes.error = path + " is not a regular file";
    return notes;
  }
  const UniqueElf elf(elf_begin(fd.get(), ELF_C_READ_MMAP, nullptr));
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF) {
    notes.error = path + " is not an ELF file";
    return notes;
  }
  // The parser reads the notes' raw bytes in this layout only.
  const char *ident = elf_getident(elf.get(), nullptr);
  if (!ident || ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB) {
    notes.error = path + " is not a 64-bit little-endian ELF file";
    return notes;
  }
  std::size_t names_index = 0;
  if (elf_getshdrstrndx(elf.get(), &names_index) != 0) {
    notes.error = path + ": cannot read section names: " + elf_error();
    return notes;
  }
  for (Elf_Scn *scn = elf_nextscn(elf.get(), nullptr); scn; scn = elf_nextscn(elf.get(), scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
      continue;
    const char *name = elf_strptr(elf.get(), names_index, shdr.sh_name);
    if (!name || name != kStapsdtSection)
      continue;
    // Raw bytes: the parser does its own little-endian reads.
    const Elf_Data *data = elf_rawdata(scn, nullptr);
    if (!data) {
      notes = {};
      notes.error = path + ": cannot read " + std::string(kStapsdtSection) + ": " + elf_error();
      return notes;
    }
    if (!data->d_buf || data->d_size == 0)
      continue;
    UsdtNotes section =
        parse_stapsdt_notes(std::span(static_cast<const std::byte *>(data->d_buf), data->d_size));
    notes.probes.insert(notes.probes.end(), std::make_move_iterator(section.probes.begin()),
                        std::make_move_iterator(section.probes.end()));
    notes.malformed += section.malformed;
  }
  return notes;
}

} // namespace neutracer
