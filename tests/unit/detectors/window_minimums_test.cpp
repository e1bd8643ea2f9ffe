// SPDX-License-Identifier: Apache-2.0
#include "detectors/window_minimums.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace neutracer {
namespace {

constexpr std::uint64_t kSecond = 1'000'000'000ull;

TEST(RisingMinimums, NeedsEveryWindowAboveTheLastAndTheFloorInAll) {
  EXPECT_TRUE(rising_minimums({10, 20, 30}, 3, 20));
  EXPECT_FALSE(rising_minimums({10, 20, 29}, 3, 20)) << "rose by 19, floor 20";
  EXPECT_FALSE(rising_minimums({10, 20, 20, 40}, 4, 20)) << "one flat window breaks the trend";
  EXPECT_FALSE(rising_minimums({10, 30, 25, 40}, 4, 20)) << "one dip breaks the trend";
}

TEST(RisingMinimums, NeedsAllWindowsAndAtLeastTwo) {
  EXPECT_FALSE(rising_minimums({10, 20}, 3, 1)) << "a window is still missing";
  EXPECT_FALSE(rising_minimums({10}, 1, 0)) << "one window is no trend";
  EXPECT_FALSE(rising_minimums({}, 0, 0));
}

TEST(WindowMinimums, KeepsEachWindowsLowestLevelOldestFirst) {
  WindowMinimums windows(1.0, 3);
  windows.observe(0, 50);
  windows.observe(kSecond / 2, 40);      // window 0: min 40
  windows.observe(kSecond + 1, 70);      // window 1: carries 40 until 70
  windows.observe(2 * kSecond + 1, 90);  // window 2: 70 until 90
  windows.observe(3 * kSecond + 1, 100); // window 3 still open
  EXPECT_EQ(windows.last_complete(3 * kSecond + 2), (std::vector<std::uint64_t>{40, 40, 70}));
  EXPECT_TRUE(rising_minimums(windows.last_complete(5 * kSecond), windows.windows(), 10))
      << "windows 2, 3 and 4 hold 70, 90 and 100";
}

} // namespace
} // namespace neutracer
