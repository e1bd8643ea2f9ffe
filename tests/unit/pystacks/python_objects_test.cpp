// SPDX-License-Identifier: Apache-2.0
// str, bytes and code objects read from fake process memory, garbage included.
#include "pystacks/python_objects.h"

#include <gtest/gtest.h>

#include "tests/unit/fake_python.h"

namespace neutracer {
namespace {

using test::FakePython;

class PythonObjects : public testing::TestWithParam<int> {
protected:
  FakePython python{PythonVersion{3, GetParam()}};
  std::optional<std::string> str(std::uint64_t address) {
    return read_python_str(python.memory, python.offsets, python.types, address);
  }
};

TEST_P(PythonObjects, CompactStringsOfEveryKindReadAsUtf8) {
  EXPECT_EQ(str(python.str("train.py")), "train.py");
  EXPECT_EQ(str(python.str("")), "");
  EXPECT_EQ(str(python.str({'c', 0xe9}, 1)), "c\xc3\xa9");                     // Latin-1: é
  EXPECT_EQ(str(python.str({0x4e2d, 0x6587}, 2)), "\xe4\xb8\xad\xe6\x96\x87"); // UCS-2
  EXPECT_EQ(str(python.str({'f', 0x1f525}, 4)), "f\xf0\x9f\x94\xa5");          // UCS-4: an emoji
}

TEST_P(PythonObjects, BadCodePointsBecomeReplacementCharacters) {
  EXPECT_EQ(str(python.str({0xd800}, 2)), "\xef\xbf\xbd");   // a lone surrogate
  EXPECT_EQ(str(python.str({0x110000}, 4)), "\xef\xbf\xbd"); // beyond Unicode
}

TEST_P(PythonObjects, StringsThatAreNotWhatTheySayAreUnreadable) {
  const auto address = python.str("name");
  auto &memory = python.memory;
  const auto &o = python.offsets;
  EXPECT_FALSE(str(0).has_value());
  EXPECT_FALSE(str(0xdead0000).has_value()); // unmapped
  memory.put<std::uint64_t>(address + o.object_type, python.types.bytes);
  EXPECT_FALSE(str(address).has_value()); // not a str
  memory.put<std::uint64_t>(address + o.object_type, python.types.unicode);
  memory.put<std::int64_t>(address + o.unicode_length, -1);
  EXPECT_FALSE(str(address).has_value());
  memory.put<std::int64_t>(address + o.unicode_length, kMaxPythonStringChars + 1);
  EXPECT_FALSE(str(address).has_value()); // longer than any path
  memory.put<std::int64_t>(address + o.unicode_length, 1000);
  EXPECT_FALSE(str(address).has_value()); // runs past the object into unmapped memory
  memory.put<std::int64_t>(address + o.unicode_length, 4);
  memory.put<std::uint32_t>(address + o.unicode_state, (1 << 2) | 0x40); // not compact
  EXPECT_FALSE(str(address).has_value());
  memory.put<std::uint32_t>(address + o.unicode_state, (3 << 2) | 0x20); // kind 3 does not exist
  EXPECT_FALSE(str(address).has_value());
  memory.put<std::uint32_t>(address + o.unicode_state, (1 << 2) | 0x20 | 0x40);
  EXPECT_EQ(str(address), "name");
}

TEST_P(PythonObjects, UnknownTypeObjectsAreNotChecked) {
  const auto address = python.str("x");
  python.memory.put<std::uint64_t>(address + python.offsets.object_type, 0x9999);
  EXPECT_FALSE(str(address).has_value());
  python.types = PythonTypeAddresses{}; // the interpreter exported none
  EXPECT_EQ(str(address), "x");
}

TEST_P(PythonObjects, BytesAreBounded) {
  const auto address = python.bytes({1, 2, 3});
  const auto read = [&](std::int64_t max) {
    return read_python_bytes(python.memory, python.offsets, python.types, address, max);
  };
  EXPECT_EQ(read(16), (std::vector<std::uint8_t>{1, 2, 3}));
  EXPECT_FALSE(read(2).has_value());
  python.memory.put<std::int64_t>(address + python.offsets.bytes_size, -5);
  EXPECT_FALSE(read(16).has_value());
}

TEST_P(PythonObjects, CodeObjectsGiveFileNameAndLineTable) {
  const auto address = python.code("/srv/train.py", "step", 12, {0x80, 0x00}, "Trainer.step");
  const auto code = read_python_code(python.memory, python.offsets, python.types, address);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(code->filename, "/srv/train.py");
  // The qualified name where the version has one (3.11+), else the plain name.
  EXPECT_EQ(code->name, GetParam() >= 11 ? "Trainer.step" : "step");
  EXPECT_EQ(code->header.first_line, 12);
  EXPECT_EQ(code->line_table, (std::vector<std::uint8_t>{0x80, 0x00}));
}

// The shape of the first python_frames_fuzzer finding: empty strings and an empty table are
// read without reading zero bytes of memory.
TEST_P(PythonObjects, EmptyNamesAndTablesAreRead) {
  const auto address = python.code("", "", 3, {});
  const auto reads_before = python.memory.reads();
  const auto code = read_python_code(python.memory, python.offsets, python.types, address);
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(code->filename, "");
  EXPECT_EQ(code->name, "");
  EXPECT_TRUE(code->line_table.empty());
  // Header, then type/length/state of each object, and nothing for their empty contents.
  const auto reads = python.memory.reads() - reads_before;
  EXPECT_EQ(reads, 1u + 3u + 3u + 2u);
}

TEST_P(PythonObjects, GarbageCodeObjectsAreUnreadable) {
  const auto &o = python.offsets;
  const auto read = [&](std::uint64_t address) {
    return read_python_code(python.memory, o, python.types, address);
  };
  EXPECT_FALSE(read(0).has_value());
  EXPECT_FALSE(read(0xdead0000).has_value());
  auto address = python.code("f.py", "f", 1, {});
  python.memory.put<std::uint64_t>(address + o.object_type, python.types.unicode);
  EXPECT_FALSE(read(address).has_value()); // a str is not a code object
  address = python.code("f.py", "f", 1, {});
  python.memory.put<std::uint64_t>(address + o.code_filename, 0xdead0000);
  EXPECT_FALSE(read(address).has_value()); // its file name unreadable
  address = python.code("f.py", "f", 1, {});
  python.memory.put<std::int32_t>(address + o.code_firstlineno, -7);
  EXPECT_FALSE(read(address).has_value());
  address = python.code("f.py", "f", 1, {});
  python.memory.put<std::uint64_t>(address + o.code_linetable, python.str("not bytes"));
  EXPECT_FALSE(read(address).has_value());
}

INSTANTIATE_TEST_SUITE_P(CPython, PythonObjects, testing::Values(9, 10, 11, 12, 13),
                         [](const auto &info) { return "v3_" + std::to_string(info.param); });

} // namespace
} // namespace neutracer
