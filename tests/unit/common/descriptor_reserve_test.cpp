// SPDX-License-Identifier: Apache-2.0
// The descriptors kept free at the limit: held while something grows, so that it runs out
// first, and free again once the reserve goes.
#include <gtest/gtest.h>

#include <cerrno>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/descriptor_reserve.h"
#include "common/unique_fd.h"
#include "descriptors_exhausted.h"

namespace neutracer {
namespace {

UniqueFd open_one() { return UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)); }

TEST(DescriptorReserve, HoldsItsCountWhileTheyAreFree) {
  const DescriptorReserve reserve(8);
  EXPECT_TRUE(reserve.full());
  EXPECT_EQ(reserve.held(), 8u);
}

TEST(DescriptorReserve, NotFullAtTheLimit) {
  const DescriptorsExhausted exhausted;
  const DescriptorReserve reserve(8);
  EXPECT_FALSE(reserve.full());
  EXPECT_EQ(reserve.held(), 0u);
}

// Near the limit: while the reserve is held nothing else can be opened (it took what was
// free), and once it goes what it held is free again.
TEST(DescriptorReserve, TakesWhatIsLeftAndGivesItBack) {
  rlimit saved{};
  ASSERT_EQ(::prlimit(0, RLIMIT_NOFILE, nullptr, &saved), 0);
  const UniqueFd probe = open_one();
  ASSERT_TRUE(probe);
  rlimit lowered = saved;
  lowered.rlim_cur = static_cast<rlim_t>(probe.get()) + 6; // at most 6 free, probe's included
  ASSERT_EQ(::prlimit(0, RLIMIT_NOFILE, &lowered, nullptr), 0);
  std::size_t held = 0;
  bool opened_while_held = true;
  int error = 0;
  {
    const DescriptorReserve reserve(32);
    held = reserve.held();
    opened_while_held = static_cast<bool>(open_one());
    error = errno;
    EXPECT_FALSE(reserve.full());
  }
  const bool opened_after = static_cast<bool>(open_one());
  ::prlimit(0, RLIMIT_NOFILE, &saved, nullptr);
  EXPECT_GT(held, 0u);
  EXPECT_LE(held, 5u);
  EXPECT_FALSE(opened_while_held);
  EXPECT_EQ(error, EMFILE);
  EXPECT_TRUE(opened_after);
}

} // namespace
} // namespace neutracer
