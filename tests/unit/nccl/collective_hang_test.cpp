// SPDX-License-Identifier: Apache-2.0
#include "nccl/collective_hang.h"

#include <gtest/gtest.h>

#include "nccl_event.h"

namespace neutracer {
namespace {

using test::nccl_call;
using test::nccl_init;

constexpr std::uint64_t kSecond = 1'000'000'000ull;
const ProcessId kRank0{100, 1}, kRank1{101, 1}, kRank2{102, 1};

// Three ranks that each make `calls[r]` all-reduces, one a second, the last at `last_at`.
NcclCommunicators job(const std::vector<int> &calls) {
  NcclCommunicators all;
  const ProcessId ranks[] = {kRank0, kRank1, kRank2};
  for (std::size_t r = 0; r < calls.size(); ++r) {
    all.apply(ranks[r],
              nccl_init(0x100 + r, 0xfeed, static_cast<int>(r), static_cast<int>(calls.size())));
    for (int k = 0; k < calls[r]; ++k)
      all.apply(ranks[r], nccl_call(NT_NCCL_ALL_REDUCE, 0x100 + r, 1, 7,
                                    static_cast<std::uint64_t>(k + 1) * kSecond));
  }
  return all;
}

std::vector<NcclRank> ranks_of(const NcclCommunicators &all) {
  return joined_communicators(all).begin()->second;
}

TEST(CollectiveHang, RanksThatDisagreeAndStallAreAHang) {
  const auto all = job({10, 9, 10}); // rank 1 never called the 10th
  const auto ranks = ranks_of(all);
  EXPECT_FALSE(find_collective_hang(ranks, 39 * kSecond, {})) << "29 s: not yet";
  const auto hang = find_collective_hang(ranks, 41 * kSecond, {});
  ASSERT_TRUE(hang);
  EXPECT_EQ(hang->collective, 10u);
  EXPECT_EQ(hang->op, NT_NCCL_ALL_REDUCE);
  EXPECT_DOUBLE_EQ(hang->stalled_seconds, 31);
  ASSERT_EQ(hang->behind.size(), 1u);
  EXPECT_EQ(hang->behind[0].process, kRank1);
  ASSERT_EQ(hang->waiting.size(), 2u);
  EXPECT_EQ(hang->waiting[0].communicator->last_op, NT_NCCL_ALL_REDUCE);
}

TEST(CollectiveHang, ALostEventDoesNotMakeARankLookBehind) {
  // Both ranks called 10 all-reduces; the event of rank 1's 5th was lost. The kernel's numbers
  // keep its count right, so this is a pause, not a hang.
  NcclCommunicators all;
  const ProcessId ranks[] = {kRank0, kRank1};
  for (std::uint64_t r = 0; r < 2; ++r) {
    all.apply(ranks[r], nccl_init(0x100 + r, 0xfeed, static_cast<int>(r), 2));
    for (std::uint64_t k = 1; k <= 10; ++k) {
      auto call = nccl_call(NT_NCCL_ALL_REDUCE, 0x100 + r, 1, 7, k * kSecond);
      call.call.sequence = k;
      if (r == 1 && k == 5)
        continue;
      all.apply(ranks[r], call);
    }
  }
  EXPECT_FALSE(find_collective_hang(ranks_of(all), 100 * kSecond, {}));
  EXPECT_EQ(all.processes().at(kRank1).at(0x101).missed_collectives, 1u);
}

TEST(CollectiveHang, RanksStoppedAtTheSameCollectiveArePausedNotHung) {
  const auto all = job({10, 10, 10}); // a checkpoint: nobody calls, nobody waits
  EXPECT_FALSE(find_collective_hang(ranks_of(all), 3600 * kSecond, {}));
}

TEST(CollectiveHang, ARankRunningAheadWhileCallsGoOnIsNoHang) {
  const auto all = job({12, 10, 11});
  EXPECT_FALSE(find_collective_hang(ranks_of(all), 13 * kSecond, {}));
}

TEST(CollectiveHang, OneRankAloneIsNeverJudged) {
  const auto all = job({10});
  EXPECT_FALSE(find_collective_hang(ranks_of(all), 3600 * kSecond, {}));
}

TEST(CollectiveHang, TheStallIsASetting) {
  const auto all = job({10, 9});
  EXPECT_TRUE(find_collective_hang(ranks_of(all), 16 * kSecond, {.stall_seconds = 5}));
}

} // namespace
} // namespace neutracer
