// SPDX-License-Identifier: Apache-2.0
// Line tables of CPython 3.9 (co_lnotab), 3.10 (co_linetable) and 3.11+ (location table), from
// tables written by hand after each format's description, and from tables real interpreters
// compile (every local interpreter of NEUTRACER_TEST_PYTHONS, compared with co_lines()).
#include "pystacks/line_table.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace neutracer {
namespace {

using Table = std::vector<std::uint8_t>;

std::optional<int> line(LineTableFormat format, const Table &table, std::int64_t offset,
                        int first_line = 10) {
  return line_for_offset(format, table, first_line, offset);
}

TEST(LnotabLineTable, PairsApplyWhileTheirAddressIsReached) {
  // (address delta, line delta): +6 -> +1, +8 -> +2, +4 -> -1 (a signed byte).
  const Table table{6, 1, 8, 2, 4, 0xff};
  constexpr auto kFormat = LineTableFormat::kLnotab;
  EXPECT_EQ(line(kFormat, table, 0), 10);
  EXPECT_EQ(line(kFormat, table, 5), 10);
  EXPECT_EQ(line(kFormat, table, 6), 11);
  EXPECT_EQ(line(kFormat, table, 13), 11);
  EXPECT_EQ(line(kFormat, table, 14), 13);
  EXPECT_EQ(line(kFormat, table, 18), 12);
  EXPECT_EQ(line(kFormat, table, 1000), 12); // the last line runs to the end of the code
}

TEST(LnotabLineTable, LongJumpsAreSplitIntoPairs) {
  // 300 bytes on: (255, 0) then (45, 3).
  const Table table{255, 0, 45, 3};
  EXPECT_EQ(line(LineTableFormat::kLnotab, table, 299), 10);
  EXPECT_EQ(line(LineTableFormat::kLnotab, table, 300), 13);
}

TEST(Linetable310, RangesCarryTheirLine) {
  // [0,4) +0, [4,10) +1, [10,12) no line (-128), two empty ranges of +127 each then [12,16) +6.
  const Table table{4, 0, 6, 1, 2, 0x80, 0, 127, 0, 127, 4, 6};
  constexpr auto kFormat = LineTableFormat::kLinetable310;
  EXPECT_EQ(line(kFormat, table, 0), 10);
  EXPECT_EQ(line(kFormat, table, 3), 10);
  EXPECT_EQ(line(kFormat, table, 4), 11);
  EXPECT_EQ(line(kFormat, table, 9), 11);
  EXPECT_EQ(line(kFormat, table, 10), std::nullopt); // a range without a line
  EXPECT_EQ(line(kFormat, table, 12), 11 + 127 + 127 + 6);
  EXPECT_EQ(line(kFormat, table, 16), std::nullopt); // past the table
}

// Location table entries: first byte 1CCCCLLL (code C, L = length - 1 in code units).
TEST(LocationTable311, EveryEntryKindMovesTheLineAsItsCodeSays) {
  const Table table{
      0x80, 0x05,                         // code 0 (short form), 1 unit: same line (10)
      0xd9, 0x04, 0x08,                   // code 11 (one line, +1), 2 units: 11
      0xf8,                               // code 15 (no location), 1 unit
      0xea, 0x07,                         // code 13 (no columns), 3 units: svarint 7 = -3: 8
      0xf0, 0x48, 0x03, 0x00, 0x05, 0x09, // code 14 (long), 1 unit: svarint 200 = +100: 108
      0xd7, 0x01, 0x02,                   // code 10 (one line, +0), 8 units: 108
  };
  constexpr auto kFormat = LineTableFormat::kLocations311;
  EXPECT_EQ(line(kFormat, table, 0), 10);
  EXPECT_EQ(line(kFormat, table, 2), 11);
  EXPECT_EQ(line(kFormat, table, 3), 11); // byte offsets round down to their code unit
  EXPECT_EQ(line(kFormat, table, 4), 11);
  EXPECT_EQ(line(kFormat, table, 6), std::nullopt);
  EXPECT_EQ(line(kFormat, table, 8), 8);
  EXPECT_EQ(line(kFormat, table, 12), 8);
  EXPECT_EQ(line(kFormat, table, 14), 108);
  EXPECT_EQ(line(kFormat, table, 16), 108);
  EXPECT_EQ(line(kFormat, table, 30), 108);
  EXPECT_EQ(line(kFormat, table, 32), std::nullopt); // past the table
}

TEST(LocationTable311, NoLocationKeepsTheRunningLine) {
  // +2, then no location, then +0 (one-line form): the line after the gap is still 12.
  const Table table{0xe0, 0x04, 0x05, 0xf8, 0xd0, 0x00, 0x01};
  EXPECT_EQ(line(LineTableFormat::kLocations311, table, 0), 12);
  EXPECT_EQ(line(LineTableFormat::kLocations311, table, 2), std::nullopt);
  EXPECT_EQ(line(LineTableFormat::kLocations311, table, 4), 12);
}

TEST(LineTables, AFrameThatHasNotStartedIsOnItsFirstLine) {
  for (const auto format :
       {LineTableFormat::kLnotab, LineTableFormat::kLinetable310, LineTableFormat::kLocations311}) {
    EXPECT_EQ(line(format, {}, -1, 42), 42);
    EXPECT_EQ(line(format, {}, -2, 42), 42);
  }
}

TEST(LocationTable311, MalformedTablesGiveNoLine) {
  constexpr auto kFormat = LineTableFormat::kLocations311;
  EXPECT_EQ(line(kFormat, {0xd9, 0x04}, 2), std::nullopt); // columns cut short
  EXPECT_EQ(line(kFormat, {0x05, 0x80}, 0), std::nullopt); // not an entry start
  EXPECT_EQ(line(kFormat, {0xe8}, 0), std::nullopt);       // line delta missing
  EXPECT_EQ(line(kFormat, {0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f}, 0),
            std::nullopt);                                       // a number that never ends
  EXPECT_EQ(line(kFormat, {0xe8, 0x0b}, 0, 1), std::nullopt);    // line 1 - 5: below zero
  EXPECT_EQ(line(kFormat, {0xf0, 0x02, 0x00}, 0), std::nullopt); // long form cut short
}

TEST(LineTables, LinesNeverLeaveTheIntRange) {
  // 3.10: 2^24 pairs of +127 would pass INT_MAX; a shorter table that does so with a huge
  // first line must give no line rather than wrap.
  const Table up{2, 127};
  EXPECT_EQ(line(LineTableFormat::kLinetable310, up, 0, INT32_MAX), std::nullopt);
  EXPECT_EQ(line(LineTableFormat::kLnotab, {0, 127}, 0, INT32_MAX), std::nullopt);
  // 3.11: +2^34 in one long varint.
  const Table far{0xe8, 0x40, 0x40, 0x40, 0x40, 0x40, 0x08};
  EXPECT_EQ(line(LineTableFormat::kLocations311, far, 0), std::nullopt);
}

// Each local interpreter compiles stdlib modules and prints every code object's table and the
// line of each instruction (co_lines(); 3.9: dis.findlinestarts): the decoder must agree.
class RealLineTables : public testing::TestWithParam<std::string> {};

TEST_P(RealLineTables, DecodedLinesMatchTheInterpreter) {
  const std::string command =
      GetParam() + " -B " NEUTRACER_SOURCE_DIR "/tests/unit/python_line_tables.py";
  std::unique_ptr<FILE, int (*)(FILE *)> pipe(::popen(command.c_str(), "r"), ::pclose);
  ASSERT_TRUE(pipe) << command;
  std::string output;
  char buffer[65536];
  while (const std::size_t got = std::fread(buffer, 1, sizeof buffer, pipe.get()))
    output.append(buffer, got);
  std::istringstream lines(output);
  std::size_t checked = 0;
  std::size_t codes = 0;
  for (std::string text; std::getline(lines, text);) {
    std::istringstream fields(text);
    std::string format_name, hex;
    int first_line = 0;
    fields >> format_name >> first_line >> hex;
    const auto format = format_name == "lnotab" ? LineTableFormat::kLnotab
                        : format_name == "310"  ? LineTableFormat::kLinetable310
                                                : LineTableFormat::kLocations311;
    Table table;
    for (std::size_t i = 0; hex != "-" && i + 1 < hex.size(); i += 2)
      table.push_back(static_cast<std::uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    ++codes;
    for (std::string pair; fields >> pair;) {
      const auto colon = pair.find(':');
      const std::int64_t offset = std::stoll(pair.substr(0, colon));
      const int expected = std::stoi(pair.substr(colon + 1));
      const auto got = line_for_offset(format, table, first_line, offset);
      ASSERT_EQ(got.value_or(-1), expected)
          << GetParam() << ": offset " << offset << " of a code object at line " << first_line
          << ", table " << hex;
      ++checked;
    }
  }
  EXPECT_GT(codes, 300u) << output.substr(0, 500);
  EXPECT_GT(checked, 10000u);
}

std::vector<std::string> test_pythons() {
  std::vector<std::string> pythons;
  std::istringstream list(NEUTRACER_TEST_PYTHONS);
  for (std::string python; std::getline(list, python, '|');)
    if (!python.empty())
      pythons.push_back(python);
  return pythons;
}

std::string python_test_name(const testing::TestParamInfo<std::string> &info) {
  std::string name;
  for (const char c : info.param)
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(LocalInterpreters, RealLineTables, testing::ValuesIn(test_pythons()),
                         python_test_name);

} // namespace
} // namespace neutracer
