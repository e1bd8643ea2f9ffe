// SPDX-License-Identifier: Apache-2.0
#pragma once
// The static tracepoints (USDT, SystemTap's `.note.stapsdt` notes) an ELF file declares. Only
// read here, to say whether a library has the probes we need before anything is attached;
// libbpf attaches them (it parses the same notes and switches semaphores on).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace neutracer {

struct UsdtProbe {
  std::string provider;
  std::string name;
  std::uint64_t address = 0;   // of the probe site (the note's first word)
  std::uint64_t base = 0;      // .stapsdt.base's address when the note was written
  std::uint64_t semaphore = 0; // 0: the probe has none
  std::string arguments;       // e.g. "-8@%rax -1@%dl"; empty for a probe without arguments
  // The argument count of `arguments` (space-separated specs).
  std::size_t argument_count() const;
};

struct UsdtNotes {
  std::vector<UsdtProbe> probes;
  std::size_t malformed = 0; // notes of owner "stapsdt" that could not be read
  std::string error;         // the file could not be read as ELF; probes is empty then
};

// The probes in the bytes of a `.note.stapsdt` section of a little-endian 64-bit ELF file.
// Notes of other owners or types are skipped; truncated or malformed ones are counted, never
// read past the span.
UsdtNotes parse_stapsdt_notes(std::span<const std::byte> section);

// The probes the ELF file at `path` declares (an empty list when it has no `.note.stapsdt`).
UsdtNotes read_usdt_notes(const std::string &path);

} // namespace neutracer
