// SPDX-License-Identifier: Apache-2.0
// The first instruction of a probed function: which ones the x86 kernel emulates when the uprobe
// fires (push, relative branches, nops) and which it single-steps, and the read of a function's
// first bytes at a file offset.
#include "cuda/entry_instruction.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/unique_fd.h"

namespace neutracer {
namespace {

EntryInstruction classify(std::initializer_list<std::uint8_t> bytes) {
  const std::vector<std::uint8_t> code(bytes);
  return classify_entry_instruction(code);
}

void expect(std::initializer_list<std::uint8_t> bytes, const std::string &text, bool emulated) {
  const auto instruction = classify(bytes);
  EXPECT_EQ(instruction.text, text);
  EXPECT_EQ(instruction.emulated, emulated) << text;
}

TEST(ClassifyEntryInstruction, PushOfARegisterIsEmulated) {
  expect({0x55, 0x48, 0x89, 0xe5}, "push %rbp", true);
  expect({0x53}, "push %rbx", true);
  expect({0x41, 0x54, 0x55}, "push %r12", true); // REX.B
  expect({0x41, 0x57}, "push %r15", true);
}

TEST(ClassifyEntryInstruction, PushWithOtherPrefixesIsSingleStepped) {
  expect({0x48, 0x55}, "push %rbp", false); // the kernel takes REX 0x41 only
  expect({0x66, 0x55}, "other 0x66 0x55", false);
}

TEST(ClassifyEntryInstruction, Endbr64IsSingleSteppedEvenBeforeAPush) {
  expect({0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5}, "endbr64", false);
}

TEST(ClassifyEntryInstruction, StackFrameSetupIsSingleStepped) {
  expect({0x48, 0x83, 0xec, 0x08}, "sub", false);                      // sub $0x8,%rsp
  expect({0x48, 0x81, 0xec, 0x00, 0x01, 0x00, 0x00}, "sub", false);    // sub $0x100,%rsp
  expect({0x48, 0x89, 0xe5}, "mov", false);                            // mov %rsp,%rbp
  expect({0x48, 0x8b, 0x05, 0x10, 0x20, 0x30, 0x00}, "mov", false);    // mov 0x302010(%rip),%rax
  expect({0x48, 0x8d, 0x3d, 0x00, 0x10, 0x00, 0x00}, "lea", false);    // lea 0x1000(%rip),%rdi
  expect({0x31, 0xc0}, "xor", false);                                  // xor %eax,%eax
  expect({0xb8, 0x01, 0x00, 0x00, 0x00}, "mov", false);                // mov $0x1,%eax
  expect({0xff, 0x25, 0x00, 0x10, 0x00, 0x00}, "jmp indirect", false); // a PLT entry
}

TEST(ClassifyEntryInstruction, RelativeBranchesAreEmulated) {
  expect({0xe9, 0x10, 0x20, 0x00, 0x00}, "jmp rel32", true);
  expect({0xeb, 0x10}, "jmp rel8", true);
  expect({0xe8, 0x10, 0x20, 0x00, 0x00}, "call rel32", true);
  expect({0x74, 0x05}, "jcc rel8", true);
  expect({0x0f, 0x84, 0x10, 0x20, 0x00, 0x00}, "jcc rel32", true);
  expect({0xf2, 0xe9, 0x10, 0x20, 0x00, 0x00}, "jmp rel32", true); // bnd jmp
}

TEST(ClassifyEntryInstruction, BranchesWithAnOperandSizePrefixAreRefused) {
  expect({0x66, 0xe9, 0x10, 0x20}, "jmp rel32 with 0x66 prefix", false);
  expect({0x66, 0xe8, 0x10, 0x20}, "call rel32 with 0x66 prefix", false);
}

TEST(ClassifyEntryInstruction, NopsAreEmulated) {
  expect({0x90}, "nop", true);
  expect({0x66, 0x90}, "nop", true);
  expect({0x0f, 0x1f, 0x00}, "nop", true);
  expect({0x0f, 0x1f, 0x40, 0x00}, "nop", true);
  expect({0x0f, 0x1f, 0x44, 0x00, 0x00}, "nop", true);
  expect({0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00}, "nop", true);
  expect({0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00}, "nop", true);
  expect({0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00}, "nop", true);
  expect({0x41, 0x90}, "other 0x41 0x90", false); // xchg %eax,%r8d
}

TEST(ClassifyEntryInstruction, UnknownInstructionsAreSingleStepped) {
  expect({0x0f, 0x0b}, "other 0x0f 0x0b", false);             // ud2
  expect({0xc9}, "other 0xc9", false);                        // leave
  expect({0x0f, 0x1f, 0x48, 0x00}, "other 0x0f 0x1f", false); // 0f 1f /1: not a nop
}

TEST(ClassifyEntryInstruction, EmptyOrTruncatedCodeIsUnreadable) {
  expect({}, "unreadable", false);
  expect({0xf3, 0x0f, 0x1e}, "unreadable", false);             // endbr64 cut short
  expect({0x41}, "unreadable", false);                         // REX alone
  expect({0x66, 0x66}, "unreadable", false);                   // prefixes alone
  expect({0xe9, 0x10, 0x20}, "unreadable", false);             // jmp rel32 cut short
  expect({0x0f, 0x84, 0x10}, "unreadable", false);             // jcc rel32 cut short
  expect({0x0f}, "unreadable", false);                         // escape byte alone
  expect({0x0f, 0x1f, 0x44, 0x00}, "unreadable", false);       // 5-byte nop cut short
  expect({0x48, 0x83, 0xec}, "unreadable", false);             // sub without its immediate
  expect({0x48, 0x8b, 0x05, 0x10, 0x20}, "unreadable", false); // disp32 cut short
}

// A temporary file holding `size` bytes 0, 1, 2, ... (mod 256); removed on destruction.
class TempCode {
public:
  explicit TempCode(std::size_t size) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "neutracer-entry-XXXXXX").string();
    fd_ = UniqueFd(::mkstemp(pattern.data()));
    if (!fd_)
      throw std::runtime_error("mkstemp failed");
    path_ = pattern;
    std::vector<std::uint8_t> bytes(size);
    for (std::size_t i = 0; i < size; ++i)
      bytes[i] = static_cast<std::uint8_t>(i);
    if (::write(fd_.get(), bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
      throw std::runtime_error("write failed");
  }
  ~TempCode() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  TempCode(const TempCode &) = delete;
  TempCode &operator=(const TempCode &) = delete;

  int fd() const { return fd_.get(); }

private:
  UniqueFd fd_;
  std::filesystem::path path_;
};

TEST(ReadEntryBytes, ReadsTheBytesAtTheFileOffset) {
  const TempCode file(4096);
  const auto bytes = read_entry_bytes(file.fd(), 0x123);
  ASSERT_TRUE(bytes.has_value());
  for (std::size_t i = 0; i < kEntryBytes; ++i)
    EXPECT_EQ((*bytes)[i], static_cast<std::uint8_t>(0x23 + i)) << i;
  // The last whole read of the file.
  const auto last = read_entry_bytes(file.fd(), 4096 - kEntryBytes);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->back(), 0xff);
  // pread: the descriptor's position (the end, after the write) is left alone.
  EXPECT_EQ(::lseek(file.fd(), 0, SEEK_CUR), 4096);
}

TEST(ReadEntryBytes, NothingWhenTheFileEndsFirst) {
  const TempCode file(4096);
  EXPECT_FALSE(read_entry_bytes(file.fd(), 4096 - kEntryBytes + 1).has_value());
  EXPECT_FALSE(read_entry_bytes(file.fd(), 4096).has_value());
  EXPECT_FALSE(read_entry_bytes(file.fd(), std::uint64_t{1} << 62).has_value());
  EXPECT_FALSE(read_entry_bytes(file.fd(), ~std::uint64_t{0}).has_value());
}

TEST(ReadEntryBytes, NothingFromABadDescriptor) {
  EXPECT_FALSE(read_entry_bytes(-1, 0).has_value());
}

TEST(ReadEntryBytes, TheBytesReadClassifyAsTheCodeWritten) {
  const TempCode file(64);
  const std::array<std::uint8_t, 4> endbr64{0xf3, 0x0f, 0x1e, 0xfa};
  ASSERT_EQ(::pwrite(file.fd(), endbr64.data(), endbr64.size(), 32), 4);
  const auto bytes = read_entry_bytes(file.fd(), 32);
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(classify_entry_instruction(*bytes).text, "endbr64");
}

} // namespace
} // namespace neutracer
