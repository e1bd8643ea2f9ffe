// SPDX-License-Identifier: Apache-2.0
// The sorted-vector map and set behind the per-process kernel tables.
#include "common/flat_map.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace neutracer {
namespace {

TEST(FlatMap, KeepsKeysSortedAndUnique) {
  FlatMap<int, std::string> map{{3, "c"}, {1, "a"}, {3, "second c"}};
  map[2] = "b";
  map[1] += "!";
  std::vector<int> keys;
  for (const auto &[key, value] : map)
    keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(map.at(1), "a!");
  EXPECT_EQ(map.at(3), "c"); // of equal keys the first is kept
  EXPECT_TRUE(map.contains(2));
  EXPECT_FALSE(map.contains(4));
  EXPECT_EQ(map.find(4), map.end());
  EXPECT_THROW((void)map.at(4), std::out_of_range);
  EXPECT_EQ(map.size(), 3u);
}

TEST(FlatMap, FromUnsortedAndEquality) {
  const auto map = FlatMap<std::string, int>::from_unsorted({{"b", 2}, {"a", 1}, {"b", 3}});
  EXPECT_EQ(map, (FlatMap<std::string, int>{{"a", 1}, {"b", 2}}));
  EXPECT_NE(map, (FlatMap<std::string, int>{{"a", 1}, {"b", 3}}));
  EXPECT_TRUE((FlatMap<int, int>{}).empty());
}

TEST(FlatSet, InsertContainsAndMerge) {
  FlatSet<std::string> set{"b", "a", "b"};
  EXPECT_EQ(set.size(), 2u);
  EXPECT_TRUE(set.insert("c"));
  EXPECT_FALSE(set.insert("a"));
  EXPECT_TRUE(set.contains("c"));
  EXPECT_FALSE(set.contains("d"));
  FlatSet<std::string> other{"d", "a"};
  set.merge(other);
  EXPECT_TRUE(other.empty());
  EXPECT_EQ(set, (FlatSet<std::string>{"a", "b", "c", "d"}));
  FlatSet<std::string> empty;
  FlatSet<std::string> some{"x"};
  empty.merge(some);
  EXPECT_EQ(empty, (FlatSet<std::string>{"x"}));
  EXPECT_TRUE(some.empty());
  std::vector<std::string> in_order(set.begin(), set.end());
  EXPECT_EQ(in_order, (std::vector<std::string>{"a", "b", "c", "d"}));
}

} // namespace
} // namespace neutracer
