// SPDX-License-Identifier: Apache-2.0
#include "allocator/allocator_view.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace neutracer {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

AllocatorView view_with_blocks(std::uint64_t count) {
  AllocatorView view({}, {});
  view.open = true;
  view.reason = InvestigationReason::requested;
  // Block i holds i + 1 MiB, at addresses counting down: the largest lie lowest.
  for (std::uint64_t i = 0; i < count; ++i)
    view.ledger.allocated({.address = (count - i) * 64 * kMiB,
                           .bytes = (i + 1) * kMiB,
                           .weight = (i + 1) * kMiB,
                           .site = static_cast<std::int32_t>(i % 3),
                           .time_ns = 1000});
  view.ranking = view.ledger.ranking(2000);
  return view;
}

TEST(AllocatorViewSummary, AnOpenViewShowsItsBlocksByAddress) {
  const auto summary = summary_of(view_with_blocks(4));
  EXPECT_TRUE(summary.open);
  EXPECT_EQ(summary.reason, InvestigationReason::requested);
  EXPECT_EQ(summary.live_bytes, 10 * kMiB);
  EXPECT_EQ(summary.ranking.size(), 3u);
  ASSERT_EQ(summary.blocks.size(), 4u);
  EXPECT_EQ(summary.blocks_left_out, 0u);
  for (std::size_t i = 1; i < summary.blocks.size(); ++i)
    EXPECT_LT(summary.blocks[i - 1].address, summary.blocks[i].address);
}

TEST(AllocatorViewSummary, KeepsTheLargestBlocksWhenThereAreTooMany) {
  const auto summary = summary_of(view_with_blocks(10), 3);
  ASSERT_EQ(summary.blocks.size(), 3u);
  EXPECT_EQ(summary.blocks_left_out, 7u);
  EXPECT_EQ(summary.blocks[0].bytes, 10 * kMiB) << "the largest, lowest in memory, first";
  EXPECT_EQ(summary.blocks[1].bytes, 9 * kMiB);
  EXPECT_EQ(summary.blocks[2].bytes, 8 * kMiB);
}

TEST(AllocatorViewSummary, AClosedViewKeepsItsRankingNotItsBlocks) {
  auto view = view_with_blocks(4);
  view.open = false;
  const auto summary = summary_of(view);
  EXPECT_FALSE(summary.open);
  EXPECT_EQ(summary.ranking.size(), 3u);
  EXPECT_TRUE(summary.blocks.empty());
}

} // namespace
} // namespace neutracer
