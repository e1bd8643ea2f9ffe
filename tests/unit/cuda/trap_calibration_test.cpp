// SPDX-License-Identifier: Apache-2.0
// The launch trap calibration: the difference of medians, and where the probed function lies in
// its file (what the uprobe is attached to).
#include "cuda/trap_calibration.h"

#include <gtest/gtest.h>

#include <fstream>

namespace neutracer {
namespace {

TEST(TrapCostNs, IsTheDifferenceOfTheMedians) {
  // Medians 10 and 13: one slow outlier per side does not move them.
  const auto cost = trap_cost_ns({10, 9, 11, 50, 10}, {13, 12, 14, 13, 90});
  ASSERT_TRUE(cost.has_value());
  EXPECT_DOUBLE_EQ(*cost, 3.0);
}

TEST(TrapCostNs, NothingWhenTheProbeCostsNothingOrNoRoundRan) {
  EXPECT_FALSE(trap_cost_ns({10, 10, 10}, {10, 9, 10}).has_value());
  EXPECT_FALSE(trap_cost_ns({}, {10}).has_value());
  EXPECT_FALSE(trap_cost_ns({10}, {}).has_value());
}

TEST(LocateCode, FindsTheTargetsFirstInstructionInItsFile) {
  const auto location = locate_code(trap_calibration_target());
  ASSERT_TRUE(location.has_value());
  EXPECT_EQ(location->path, "/proc/self/exe"); // linked into this test program
  std::ifstream file(location->path, std::ios::binary);
  ASSERT_TRUE(file.is_open());
  file.seekg(static_cast<std::streamoff>(location->offset));
  char first = 0;
  ASSERT_TRUE(file.get(first));
#if defined(__x86_64__)
  EXPECT_EQ(static_cast<unsigned char>(first), 0x55) << "push %rbp, which the kernel emulates";
#endif
}

TEST(LocateCode, NothingForAnAddressOutsideEveryObject) {
  EXPECT_FALSE(locate_code(reinterpret_cast<const void *>(16)).has_value());
}

TEST(MeasureTrapCost, NothingWhenTheProbeCannotAttach) {
  EXPECT_FALSE(measure_trap_cost_ns([] { return UniqueFd(); }, 2, 100).has_value());
}

} // namespace
} // namespace neutracer
