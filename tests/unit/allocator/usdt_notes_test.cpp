// SPDX-License-Identifier: Apache-2.0
#include "allocator/usdt_notes.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace neutracer {
namespace {

namespace fs = std::filesystem;

// Builds a `.note.stapsdt` section the way the assembler lays one out (little-endian 64-bit).
class NoteBytes {
public:
  // One note; `desc` as given, so a test can cut it short or leave out NULs.
  NoteBytes &note(std::string_view owner_with_nul, std::uint32_t type, const std::string &desc) {
    put32(static_cast<std::uint32_t>(owner_with_nul.size()));
    put32(static_cast<std::uint32_t>(desc.size()));
    put32(type);
    put(owner_with_nul);
    pad();
    put(desc);
    pad();
    return *this;
  }
  NoteBytes &stapsdt(const std::string &desc) {
    return note(std::string_view("stapsdt\0", 8), 3, desc);
  }
  NoteBytes &raw(const std::string &bytes) {
    put(bytes);
    return *this;
  }
  // Drops the last `count` bytes, as a section cut short would.
  NoteBytes &cut(std::size_t count) {
    bytes_.resize(bytes_.size() - count);
    return *this;
  }
  std::span<const std::byte> span() const { return bytes_; }

private:
  void put32(std::uint32_t value) {
    for (int i = 0; i < 4; ++i)
      bytes_.push_back(static_cast<std::byte>(value >> (8 * i)));
  }
  void put(std::string_view text) {
    for (const char c : text)
      bytes_.push_back(static_cast<std::byte>(c));
  }
  void pad() {
    while (bytes_.size() % 4 != 0)
      bytes_.push_back(std::byte{0});
  }
  std::vector<std::byte> bytes_;
};

std::string le64(std::uint64_t value) {
  std::string bytes;
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<char>(value >> (8 * i)));
  return bytes;
}

// A stapsdt description: pc, base, semaphore, then provider, name and arguments, each NUL-ended.
std::string probe_desc(std::uint64_t pc, std::uint64_t base, std::uint64_t semaphore,
                       std::string_view provider, std::string_view name,
                       std::string_view arguments) {
  std::string desc = le64(pc) + le64(base) + le64(semaphore);
  desc.append(provider).push_back('\0');
  desc.append(name).push_back('\0');
  desc.append(arguments).push_back('\0');
  return desc;
}

TEST(UsdtNotes, ParsesOneProbe) {
  NoteBytes section;
  section.stapsdt(
      probe_desc(0x1130, 0x2000, 0x4012, "pytorch", "malloc", "8@%rax -1@%sil 8@%rdi -8@%rdx"));
  const UsdtNotes notes = parse_stapsdt_notes(section.span());
  ASSERT_EQ(notes.probes.size(), 1u);
  EXPECT_EQ(notes.malformed, 0u);
  EXPECT_TRUE(notes.error.empty());
  const UsdtProbe &probe = notes.probes[0];
  EXPECT_EQ(probe.provider, "pytorch");
  EXPECT_EQ(probe.name, "malloc");
  EXPECT_EQ(probe.address, 0x1130u);
  EXPECT_EQ(probe.base, 0x2000u);
  EXPECT_EQ(probe.semaphore, 0x4012u);
  EXPECT_EQ(probe.arguments, "8@%rax -1@%sil 8@%rdi -8@%rdx");
  EXPECT_EQ(probe.argument_count(), 4u);
}

TEST(UsdtNotes, ReadsAllEightBytesOfEachAddress) {
  NoteBytes section;
  section.stapsdt(probe_desc(0x1122334455667788, 0x8000000000000001, 0, "p", "n", ""));
  const UsdtNotes notes = parse_stapsdt_notes(section.span());
  ASSERT_EQ(notes.probes.size(), 1u);
  EXPECT_EQ(notes.probes[0].address, 0x1122334455667788u);
  EXPECT_EQ(notes.probes[0].base, 0x8000000000000001u);
  EXPECT_EQ(notes.probes[0].semaphore, 0u);
}

TEST(UsdtNotes, ParsesTwoProbesInOrder) {
  NoteBytes section;
  section.stapsdt(probe_desc(0x10, 0x2000, 0x4012, "pytorch", "malloc", "8@%rax -1@%sil"))
      .stapsdt(probe_desc(0x20, 0x2000, 0x4010, "pytorch", "free", "8@%rdi"));
  const UsdtNotes notes = parse_stapsdt_notes(section.span());
  ASSERT_EQ(notes.probes.size(), 2u);
  EXPECT_EQ(notes.probes[0].name, "malloc");
  EXPECT_EQ(notes.probes[1].name, "free");
  EXPECT_EQ(notes.probes[1].address, 0x20u);
  EXPECT_EQ(notes.probes[1].arguments, "8@%rdi");
  EXPECT_EQ(notes.malformed, 0u);
}

TEST(UsdtNotes, SkipsOtherOwnersAndTypes) {
  NoteBytes section;
  section.note(std::string_view("GNU\0", 4), 3, probe_desc(1, 2, 3, "gnu", "probe", ""))
      .note(std::string_view("stapsdt\0", 8), 4, probe_desc(1, 2, 3, "other", "type", ""))
      .stapsdt(probe_desc(0x30, 0, 0, "pytorch", "free", "8@%rdi"));
  const UsdtNotes notes = parse_stapsdt_notes(section.span());
  ASSERT_EQ(notes.probes.size(), 1u);
  EXPECT_EQ(notes.probes[0].provider, "pytorch");
  EXPECT_EQ(notes.probes[0].address, 0x30u);
  EXPECT_EQ(notes.malformed, 0u);
}

TEST(UsdtNotes, OddNameSizesKeepTheNextNoteAligned) {
  // "ab\0" pads to 4 bytes, a 5-byte desc to 8: the stapsdt note after them is still found.
  NoteBytes section;
  section.note(std::string_view("ab\0", 3), 1, "12345")
      .stapsdt(probe_desc(0x40, 0, 0, "pytorch", "free", "8@%rdi"));
  const UsdtNotes notes = parse_stapsdt_notes(section.span());
  ASSERT_EQ(notes.probes.size(), 1u);
  EXPECT_EQ(notes.probes[0].address, 0x40u);
}

TEST(UsdtNotes, ToleratesAMissingFinalPadding) {
  NoteBytes section;
  // A 1-byte argument string ("\0" only) leaves the desc 24 + 2 + 2 + 1 = 29 bytes: 3 of padding.
  section.stapsdt(probe_desc(0x50, 0, 0, "p", "n", "")).cut(3);
  const UsdtNotes notes = parse_stapsdt_notes(section.span());
  ASSERT_EQ(notes.probes.size(), 1u);
  EXPECT_EQ(notes.probes[0].argument_count(), 0u);
  EXPECT_EQ(notes.malformed, 0u);
}

TEST(UsdtNotes, CountsATruncatedNoteAndKeepsTheOnesBefore) {
  NoteBytes section;
  section.stapsdt(probe_desc(0x10, 0, 0, "pytorch", "malloc", "8@%rax"))
      .stapsdt(probe_desc(0x20, 0, 0, "pytorch", "free", "8@%rdi"))
      .cut(12); // into the second note's description
  const UsdtNotes notes = parse_stapsdt_notes(section.span());
  ASSERT_EQ(notes.probes.size(), 1u);
  EXPECT_EQ(notes.probes[0].name, "malloc");
  EXPECT_EQ(notes.malformed, 1u);
}

TEST(UsdtNotes, CountsATruncatedHeader) {
  NoteBytes section;
  section.stapsdt(probe_desc(0x10, 0, 0, "pytorch", "free", "8@%rdi")).raw("\x08\0\0\0\x20");
  const UsdtNotes notes = parse_stapsdt_notes(section.span());
  EXPECT_EQ(notes.probes.size(), 1u);
  EXPECT_EQ(notes.malformed, 1u);
}

TEST(UsdtNotes, CountsANameSizePastTheEnd) {
  NoteBytes section;
  section.raw(std::string("\xff\xff\xff\xff\0\0\0\0\3\0\0\0stapsdt\0", 20));
  const UsdtNotes notes = parse_stapsdt_notes(section.span());
  EXPECT_TRUE(notes.probes.empty());
  EXPECT_EQ(notes.malformed, 1u);
}

TEST(UsdtNotes, CountsADescriptionSizePastTheEnd) {
  NoteBytes section;
  section.raw(std::string("\x08\0\0\0\xff\xff\xff\xff\3\0\0\0stapsdt\0", 20)).raw(le64(1));
  const UsdtNotes notes = parse_stapsdt_notes(section.span());
  EXPECT_TRUE(notes.probes.empty());
  EXPECT_EQ(notes.malformed, 1u);
}

TEST(UsdtNotes, CountsMissingNulsAndGoesOn) {
  const std::string addresses = le64(0x10) + le64(0) + le64(0);
  NoteBytes section;
  section
      .stapsdt(addresses + std::string("pytorch\0malloc\0", 15)) // arguments unterminated
      .stapsdt(addresses + "pytorch")                            // no NUL at all
      .stapsdt(addresses.substr(0, 20))                          // addresses cut short
      .stapsdt(probe_desc(0x60, 0, 0, "pytorch", "free", "8@%rdi"));
  const UsdtNotes notes = parse_stapsdt_notes(section.span());
  ASSERT_EQ(notes.probes.size(), 1u);
  EXPECT_EQ(notes.probes[0].address, 0x60u);
  EXPECT_EQ(notes.malformed, 3u);
}

TEST(UsdtNotes, CountsAnEmptyProviderOrName) {
  NoteBytes section;
  section.stapsdt(probe_desc(0x10, 0, 0, "", "malloc", ""))
      .stapsdt(probe_desc(0x20, 0, 0, "pytorch", "", ""));
  const UsdtNotes notes = parse_stapsdt_notes(section.span());
  EXPECT_TRUE(notes.probes.empty());
  EXPECT_EQ(notes.malformed, 2u);
}

TEST(UsdtNotes, EmptySectionHasNothing) {
  const UsdtNotes notes = parse_stapsdt_notes({});
  EXPECT_TRUE(notes.probes.empty());
  EXPECT_EQ(notes.malformed, 0u);
}

TEST(UsdtNotes, ArgumentCountSplitsOnSpaces) {
  UsdtProbe probe;
  EXPECT_EQ(probe.argument_count(), 0u);
  probe.arguments = "8@%rdi";
  EXPECT_EQ(probe.argument_count(), 1u);
  probe.arguments = "-4@$5 8@-16(%rbp)  -1@%sil ";
  EXPECT_EQ(probe.argument_count(), 3u);
  probe.arguments = " ";
  EXPECT_EQ(probe.argument_count(), 0u);
}

TEST(UsdtNotes, ReadsTheStandInTorchLibrary) {
  const UsdtNotes notes = read_usdt_notes(NEUTRACER_STANDIN_C10_CUDA);
  ASSERT_TRUE(notes.error.empty()) << notes.error;
  EXPECT_EQ(notes.malformed, 0u);
  ASSERT_EQ(notes.probes.size(), 2u);
  for (const UsdtProbe &probe : notes.probes) {
    EXPECT_EQ(probe.provider, "pytorch");
    EXPECT_NE(probe.address, 0u);
    EXPECT_NE(probe.base, 0u);
    EXPECT_NE(probe.semaphore, 0u) << probe.name;
    if (probe.name == "malloc")
      EXPECT_EQ(probe.argument_count(), 4u) << probe.arguments;
    else if (probe.name == "free")
      EXPECT_EQ(probe.argument_count(), 1u) << probe.arguments;
    else
      ADD_FAILURE() << "unexpected probe " << probe.name;
  }
  EXPECT_NE(notes.probes[0].semaphore, notes.probes[1].semaphore);
}

TEST(UsdtNotes, ALibraryWithoutNotesHasNoProbesAndNoError) {
  const UsdtNotes notes = read_usdt_notes(NEUTRACER_STANDIN_LIBRARY);
  EXPECT_TRUE(notes.error.empty()) << notes.error;
  EXPECT_TRUE(notes.probes.empty());
  EXPECT_EQ(notes.malformed, 0u);
}

TEST(UsdtNotes, AFileThatIsNotElfIsAnError) {
  const fs::path path =
      fs::temp_directory_path() / ("neutracer-usdt-not-elf-" + std::to_string(::getpid()));
  std::ofstream(path) << "#!/bin/sh\necho not an ELF file\n";
  const UsdtNotes notes = read_usdt_notes(path.string());
  fs::remove(path);
  EXPECT_TRUE(notes.probes.empty());
  EXPECT_NE(notes.error.find(path.string()), std::string::npos) << notes.error;
  EXPECT_NE(notes.error.find("not an ELF file"), std::string::npos) << notes.error;
}

TEST(UsdtNotes, AMissingFileIsAnError) {
  const std::string path = "/nonexistent/neutracer/libc10_cuda.so";
  const UsdtNotes notes = read_usdt_notes(path);
  EXPECT_TRUE(notes.probes.empty());
  EXPECT_NE(notes.error.find(path), std::string::npos) << notes.error;
  EXPECT_NE(notes.error.find("No such file"), std::string::npos) << notes.error;
}

TEST(UsdtNotes, ADirectoryIsAnError) {
  const UsdtNotes notes = read_usdt_notes("/tmp");
  EXPECT_TRUE(notes.probes.empty());
  EXPECT_NE(notes.error.find("not a regular file"), std::string::npos) << notes.error;
}

} // namespace
} // namespace neutracer
