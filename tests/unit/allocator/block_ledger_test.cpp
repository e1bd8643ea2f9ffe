// SPDX-License-Identifier: Apache-2.0
#include "allocator/block_ledger.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace neutracer {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
// CLOCK_MONOTONIC starts anywhere.
constexpr double kClockStart = 5000.25;

std::uint64_t ns(double seconds) {
  return static_cast<std::uint64_t>(std::llround((kClockStart + seconds) * 1e9));
}

BlockAllocation block(std::uint64_t address, std::uint64_t weight, std::int32_t site,
                      double seconds) {
  return {
      .address = address, .bytes = weight, .weight = weight, .site = site, .time_ns = ns(seconds)};
}

std::vector<std::int32_t> sites(const std::vector<SiteLiveBytes> &ranking) {
  std::vector<std::int32_t> order;
  for (const auto &site : ranking)
    order.push_back(site.site);
  return order;
}

TEST(BlockLedger, SurvivorsOutrankYoungBlocks) {
  BlockLedger ledger; // survivors: 2 s old
  // Site 1 keeps a little from long ago; site 2 holds much more, but only this step's
  // temporaries.
  ledger.allocated(block(0x1000, 10 * kMiB, 1, 0));
  ledger.allocated(block(0x2000, 30 * kMiB, 2, 9.5));
  ledger.allocated(block(0x3000, 30 * kMiB, 2, 9.9));

  const auto ranking = ledger.ranking(ns(10));
  ASSERT_EQ(ranking.size(), 2u);
  EXPECT_EQ(ranking[0].site, 1);
  EXPECT_EQ(ranking[0].survivor_bytes, 10 * kMiB);
  EXPECT_EQ(ranking[0].live_bytes, 10 * kMiB);
  EXPECT_EQ(ranking[0].live_blocks, 1u);
  EXPECT_EQ(ranking[1].site, 2);
  EXPECT_EQ(ranking[1].survivor_bytes, 0u);
  EXPECT_EQ(ranking[1].live_bytes, 60 * kMiB);
  EXPECT_EQ(ranking[1].live_blocks, 2u);

  // Once site 2's blocks have lived past the survivor age, they count.
  const auto later = ledger.ranking(ns(12));
  ASSERT_EQ(later.size(), 2u);
  EXPECT_EQ(later[0].site, 2);
  EXPECT_EQ(later[0].survivor_bytes, 60 * kMiB);
}

TEST(BlockLedger, SurvivorAgeIsInclusive) {
  BlockLedger ledger({.survivor_age_seconds = 3});
  ledger.allocated(block(0x1000, kMiB, 4, 1));
  EXPECT_EQ(ledger.ranking(ns(3.9))[0].survivor_bytes, 0u);
  EXPECT_EQ(ledger.ranking(ns(4))[0].survivor_bytes, kMiB);
}

TEST(BlockLedger, BlockDatedAfterNowIsYoung) {
  BlockLedger ledger;
  ledger.allocated(block(0x1000, kMiB, 4, 10));
  const auto ranking = ledger.ranking(ns(5));
  ASSERT_EQ(ranking.size(), 1u);
  EXPECT_EQ(ranking[0].survivor_bytes, 0u);
  EXPECT_EQ(ranking[0].live_bytes, kMiB);
}

TEST(BlockLedger, TiesBreakOnLiveBytesThenLowestSite) {
  BlockLedger ledger;
  // Sites 3, 5 and 7 keep the same survivors; 7 also holds young blocks; 3 and 5 tie on both.
  ledger.allocated(block(0x1000, 8 * kMiB, 5, 0));
  ledger.allocated(block(0x2000, 8 * kMiB, 3, 0));
  ledger.allocated(block(0x3000, 8 * kMiB, 7, 0));
  ledger.allocated(block(0x4000, 1 * kMiB, 7, 9));
  // Site 9 has more live bytes than any, all young: it ranks last.
  ledger.allocated(block(0x5000, 64 * kMiB, 9, 9));

  EXPECT_EQ(sites(ledger.ranking(ns(10))), (std::vector<std::int32_t>{7, 3, 5, 9}));
}

TEST(BlockLedger, UnknownSiteIsRankedLikeAnyOther) {
  BlockLedger ledger;
  ledger.allocated(block(0x1000, 2 * kMiB, -1, 0));
  ledger.allocated(block(0x2000, 1 * kMiB, 0, 0));
  EXPECT_EQ(sites(ledger.ranking(ns(10))), (std::vector<std::int32_t>{-1, 0}));
}

TEST(BlockLedger, WeightSumsPerSiteAndBelowBytesCountsAsBytes) {
  BlockLedger ledger;
  // A sampled small block stands for more than itself.
  ledger.allocated(
      {.address = 0x1000, .bytes = 4096, .weight = 2 * kMiB, .site = 1, .time_ns = ns(0)});
  // A weight below the block's own size is a probe's mistake: the block counts its bytes.
  ledger.allocated(
      {.address = 0x2000, .bytes = 3 * kMiB, .weight = 1, .site = 1, .time_ns = ns(0)});
  EXPECT_EQ(ledger.live_bytes(), 5 * kMiB);
  const auto ranking = ledger.ranking(ns(10));
  ASSERT_EQ(ranking.size(), 1u);
  EXPECT_EQ(ranking[0].live_bytes, 5 * kMiB);
  EXPECT_EQ(ranking[0].survivor_bytes, 5 * kMiB);
  EXPECT_EQ(ranking[0].live_blocks, 2u);
}

TEST(BlockLedger, ReplacedAddressSubtractsTheOldBlock) {
  BlockLedger ledger;
  ledger.allocated(block(0x1000, 100 * kMiB, 1, 0));
  // Its free was lost: the address comes back as a new, smaller block of another site.
  ledger.allocated(block(0x1000, 30 * kMiB, 2, 9));

  EXPECT_EQ(ledger.live_bytes(), 30 * kMiB);
  EXPECT_EQ(ledger.live_blocks(), 1u);
  const auto ranking = ledger.ranking(ns(10));
  ASSERT_EQ(ranking.size(), 1u);
  EXPECT_EQ(ranking[0].site, 2);
  EXPECT_EQ(ranking[0].live_bytes, 30 * kMiB);
  // The new block is young: the old one's age does not carry over.
  EXPECT_EQ(ranking[0].survivor_bytes, 0u);
}

TEST(BlockLedger, FreesOfUnknownAddressesAreIgnored) {
  BlockLedger ledger;
  ledger.allocated(block(0x1000, 10 * kMiB, 1, 0));
  ledger.allocated(block(0x2000, 20 * kMiB, 1, 0));

  ledger.freed(0x9000, ns(5)); // handed out before the view opened
  EXPECT_EQ(ledger.live_bytes(), 30 * kMiB);
  EXPECT_EQ(ledger.live_blocks(), 2u);

  ledger.freed(0x1000, ns(5));
  ledger.freed(0x1000, ns(5)); // twice: the second is unknown by now
  EXPECT_EQ(ledger.live_bytes(), 20 * kMiB);
  EXPECT_EQ(ledger.live_blocks(), 1u);

  ledger.freed(0x2000, ns(5));
  EXPECT_EQ(ledger.live_bytes(), 0u);
  EXPECT_TRUE(ledger.ranking(ns(10)).empty());
}

TEST(BlockLedger, AllocationsBeyondMaxBlocksAreCountedNotKept) {
  BlockLedger ledger({.max_blocks = 2});
  ledger.allocated(block(0x1000, 1 * kMiB, 1, 0));
  ledger.allocated(block(0x2000, 2 * kMiB, 1, 0));
  ledger.allocated(block(0x3000, 4 * kMiB, 2, 0));
  EXPECT_EQ(ledger.live_blocks(), 2u);
  EXPECT_EQ(ledger.live_bytes(), 3 * kMiB);
  EXPECT_EQ(ledger.untracked(), 1u);
  EXPECT_EQ(sites(ledger.ranking(ns(10))), (std::vector<std::int32_t>{1}));

  // Its free is then unknown, and ignored.
  ledger.freed(0x3000, ns(5));
  EXPECT_EQ(ledger.live_bytes(), 3 * kMiB);

  // Replacing a live address adds no block, so it is kept even when full.
  ledger.allocated(block(0x2000, 8 * kMiB, 3, 0));
  EXPECT_EQ(ledger.live_bytes(), 9 * kMiB);
  EXPECT_EQ(ledger.untracked(), 1u);

  // A free makes room again.
  ledger.freed(0x1000, ns(5));
  ledger.allocated(block(0x4000, 16 * kMiB, 4, 0));
  EXPECT_EQ(ledger.live_blocks(), 2u);
  EXPECT_EQ(ledger.live_bytes(), 24 * kMiB);
  EXPECT_EQ(ledger.untracked(), 1u);
}

TEST(BlockLedger, FreedBlocksStayCachedUntilTheirBytesAreHandedOutAgain) {
  BlockLedger ledger;
  ledger.allocated(block(0x100000, kMiB, 1, 0));
  ledger.allocated(block(0x200000, kMiB, 2, 1));
  ledger.allocated(block(0x300000, kMiB, 3, 2));
  ledger.freed(0x200000, ns(3));
  ledger.freed(0x300000, ns(4));

  auto blocks = ledger.blocks();
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].address, 0x100000u);
  EXPECT_TRUE(blocks[0].live);
  EXPECT_EQ(blocks[0].time_ns, ns(0)) << "a live block carries its allocation time";
  EXPECT_EQ(blocks[1].address, 0x200000u);
  EXPECT_FALSE(blocks[1].live);
  EXPECT_EQ(blocks[1].time_ns, ns(3)) << "a cached block carries its free time";
  EXPECT_EQ(blocks[1].site, 2);
  EXPECT_EQ(ledger.cached_blocks(), 2u);
  EXPECT_EQ(ledger.live_bytes(), kMiB) << "cached blocks are not live bytes";

  // A new block that starts inside the first cached one and reaches into the second: the pool
  // handed out both ranges again (split and merged blocks), so neither is cached any longer.
  ledger.allocated(block(0x280000, kMiB, 4, 5));
  blocks = ledger.blocks();
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[1].address, 0x280000u);
  EXPECT_TRUE(blocks[1].live);
  EXPECT_EQ(ledger.cached_blocks(), 0u);
}

TEST(BlockLedger, CachedBlocksAreBoundedByMaxBlocks) {
  BlockLedger ledger({.max_blocks = 2});
  ledger.allocated(block(0x100000, kMiB, 1, 0));
  ledger.allocated(block(0x200000, kMiB, 1, 0));
  ledger.freed(0x100000, ns(1));
  ledger.freed(0x200000, ns(1));
  ledger.allocated(block(0x400000, kMiB, 1, 2));
  ledger.freed(0x400000, ns(3)); // a third cached block is not kept
  EXPECT_EQ(ledger.cached_blocks(), 2u);
  EXPECT_EQ(ledger.live_blocks(), 0u);
}

TEST(BlockLedger, DroppingBlocksKeepsTheTotals) {
  BlockLedger ledger;
  ledger.allocated(block(0x100000, 3 * kMiB, 1, 0));
  ledger.allocated(block(0x400000, kMiB, 1, 0));
  ledger.freed(0x400000, ns(1));
  ledger.drop_blocks();
  EXPECT_EQ(ledger.live_bytes(), 3 * kMiB);
  EXPECT_EQ(ledger.live_blocks(), 0u);
  EXPECT_EQ(ledger.cached_blocks(), 0u);
  EXPECT_TRUE(ledger.blocks().empty());
}

} // namespace
} // namespace neutracer
