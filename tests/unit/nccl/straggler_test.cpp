// SPDX-License-Identifier: Apache-2.0
#include "nccl/straggler.h"

#include <gtest/gtest.h>

#include <random>

#include "nccl_event.h"

namespace neutracer {
namespace {

using test::nccl_call;
using test::nccl_init;

constexpr std::uint64_t kMs = 1'000'000ull;
const ProcessId kRanks[] = {{100, 1}, {101, 1}, {102, 1}, {103, 1}};

// Four ranks, 60 steps of 100 ms with two all-reduces each; every rank arrives with a jitter of
// up to `jitter_ms`, and rank `slow` (if any) `delay_ms` later than the rest.
NcclCommunicators steps(int slow, double delay_ms, double jitter_ms, int count = 60) {
  NcclCommunicators all;
  std::mt19937 random(3);
  std::uniform_real_distribution<double> jitter(0, jitter_ms);
  for (int r = 0; r < 4; ++r)
    all.apply(kRanks[r], nccl_init(0x100 + static_cast<std::uint64_t>(r), 0xbeef, r, 4));
  for (int step = 0; step < count; ++step)
    for (int call = 0; call < 2; ++call)
      for (int r = 0; r < 4; ++r) {
        const double ms = step * 100.0 + call * 10.0 + jitter(random) + (r == slow ? delay_ms : 0);
        all.apply(kRanks[r], nccl_call(NT_NCCL_ALL_REDUCE, 0x100 + static_cast<std::uint64_t>(r), 1,
                                       7, static_cast<std::uint64_t>(ms * kMs) + 1));
      }
  return all;
}

std::vector<NcclRank> ranks_of(const NcclCommunicators &all) {
  return joined_communicators(all).begin()->second;
}

TEST(Straggler, TheRankThatArrivesLastIsNamedWithItsWaitShare) {
  const auto all = steps(/*slow=*/2, /*delay_ms=*/50, /*jitter_ms=*/2);
  const auto straggler = find_straggler(ranks_of(all), 6000 * kMs, {});
  ASSERT_TRUE(straggler);
  EXPECT_EQ(straggler->rank.process, kRanks[2]);
  EXPECT_GT(straggler->wait_share, 0.99);
  EXPECT_NEAR(straggler->mean_wait_seconds, 0.050, 0.003);
  EXPECT_EQ(straggler->collectives, 120u);
}

TEST(Straggler, ACollectiveWithALostArrivalIsNotJudged) {
  auto all = steps(/*slow=*/2, /*delay_ms=*/50, /*jitter_ms=*/2, /*count=*/10);
  // Rank 2's next collective is numbered 22: its 21st event was lost. Both collectives 21
  // and 22 have arrivals of every other rank.
  for (int r = 0; r < 4; ++r) {
    const auto handle = 0x100 + static_cast<std::uint64_t>(r);
    for (std::uint64_t number = 21; number <= 22; ++number) {
      if (r == 2 && number == 21)
        continue;
      auto call = nccl_call(NT_NCCL_ALL_REDUCE, handle, 1, 7, (1000 + number) * kMs);
      call.call.sequence = number;
      all.apply(kRanks[r], call);
    }
  }
  const auto straggler = find_straggler(ranks_of(all), 1100 * kMs, {});
  ASSERT_TRUE(straggler);
  EXPECT_EQ(straggler->rank.process, kRanks[2]);
  EXPECT_EQ(straggler->collectives, 21u) << "20 steps' and number 22; not number 21";
}

TEST(Straggler, RanksInStepNameNobody) {
  const auto all = steps(/*slow=*/-1, 0, /*jitter_ms=*/2);
  EXPECT_FALSE(find_straggler(ranks_of(all), 6000 * kMs, {})) << "jitter is shared by all";
}

TEST(Straggler, OnlyTheWindowCounts) {
  const auto all = steps(/*slow=*/1, 50, 2);
  // 60 s after the last step: nothing in a 30 s window.
  EXPECT_FALSE(find_straggler(ranks_of(all), 66000 * kMs, {}));
  // A 1 s window holds 20 collectives at the end.
  const auto straggler = find_straggler(ranks_of(all), 6000 * kMs, {.window_seconds = 1});
  ASSERT_TRUE(straggler);
  EXPECT_EQ(straggler->collectives, 20u);
}

TEST(Straggler, TooFewCollectivesNameNobody) {
  const auto all = steps(/*slow=*/1, 50, 2, /*count=*/4);
  EXPECT_FALSE(find_straggler(ranks_of(all), 400 * kMs, {})) << "8 collectives, 10 needed";
}

TEST(Straggler, ArrivalsAreMatchedBySequenceWhenRanksKeepDifferentHistories) {
  // Rank 0 keeps only its 5 latest arrivals, the others more: only those 5 are compared.
  NcclCommunicators all({.max_communicators_per_process = 8, .arrivals_kept = 5});
  for (int r = 0; r < 2; ++r)
    all.apply(kRanks[r], nccl_init(0x100 + static_cast<std::uint64_t>(r), 0xbeef, r, 2));
  for (int k = 0; k < 20; ++k)
    for (int r = 0; r < 2; ++r)
      all.apply(kRanks[r], nccl_call(NT_NCCL_ALL_REDUCE, 0x100 + static_cast<std::uint64_t>(r), 1,
                                     7, static_cast<std::uint64_t>(k * 100 + r * 30) * kMs));
  const auto straggler = find_straggler(ranks_of(all), 2000 * kMs, {.min_collectives = 5});
  ASSERT_TRUE(straggler);
  EXPECT_EQ(straggler->rank.process, kRanks[1]);
  EXPECT_EQ(straggler->collectives, 5u);
  EXPECT_NEAR(straggler->mean_wait_seconds, 0.030, 1e-9);
}

} // namespace
} // namespace neutracer
