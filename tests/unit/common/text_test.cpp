// SPDX-License-Identifier: Apache-2.0
// The number parser the /proc, kernel log and Xid parsers share: the whole text or nothing.
#include "common/text.h"

#include <cstdint>
#include <gtest/gtest.h>

namespace neutracer {
namespace {

TEST(ParseNumber, ReadsTheWholeTextInItsBase) {
  EXPECT_EQ(parse_number<std::uint64_t>("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(parse_number<unsigned>("7f", 16), 0x7fu);
  EXPECT_EQ(parse_number<unsigned>("7F", 16), 0x7fu);
  EXPECT_EQ(parse_number<int>("-3"), -3);
}

TEST(ParseNumber, RefusesEmptyPartialSignedOrTooLargeText) {
  EXPECT_FALSE(parse_number<unsigned>(""));
  EXPECT_FALSE(parse_number<unsigned>("12 "));
  EXPECT_FALSE(parse_number<unsigned>(" 12"));
  EXPECT_FALSE(parse_number<unsigned>("0x12", 16));
  EXPECT_FALSE(parse_number<unsigned>("-1"));
  EXPECT_FALSE(parse_number<unsigned>("+1"));
  EXPECT_FALSE(parse_number<unsigned char>("100", 16));
  EXPECT_FALSE(parse_number<std::uint64_t>("18446744073709551616"));
}

TEST(HexText, LowerCaseDigitsAfterZeroX) {
  EXPECT_EQ(hex_text(0), "0x0");
  EXPECT_EQ(hex_text(0x1a2b), "0x1a2b");
  EXPECT_EQ(hex_text(~0ull), "0xffffffffffffffff");
}

} // namespace
} // namespace neutracer
