// SPDX-License-Identifier: Apache-2.0
#include "allocator/segment_blocks.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace neutracer {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

TensorBlock live(std::uint64_t address, std::uint64_t bytes) {
  return {.address = address, .bytes = bytes, .site = 1, .live = true, .time_ns = 0};
}
TensorBlock cached(std::uint64_t address, std::uint64_t bytes) {
  return {.address = address, .bytes = bytes, .site = 2, .live = false, .time_ns = 0};
}

TEST(BlocksInSegments, SortsBlocksIntoTheSegmentsThatHoldThem) {
  const std::vector<Segment> segments{{.address = 100 * kMiB, .bytes = 20 * kMiB},
                                      {.address = 10 * kMiB, .bytes = 10 * kMiB}};
  const std::vector<TensorBlock> blocks{live(104 * kMiB, 4 * kMiB), cached(10 * kMiB, 2 * kMiB),
                                        live(100 * kMiB, 2 * kMiB), live(50 * kMiB, kMiB)};
  const auto layout = blocks_in_segments(segments, blocks);
  ASSERT_EQ(layout.size(), 2u);
  EXPECT_EQ(layout[0].segment.address, 10 * kMiB) << "segments come in address order";
  ASSERT_EQ(layout[0].blocks.size(), 1u);
  EXPECT_EQ(layout[0].cached_bytes, 2 * kMiB);
  EXPECT_EQ(layout[0].live_bytes, 0u);
  EXPECT_EQ(layout[0].unseen_bytes(), 8 * kMiB);
  ASSERT_EQ(layout[1].blocks.size(), 2u);
  EXPECT_EQ(layout[1].blocks[0].address, 100 * kMiB) << "blocks come in address order";
  EXPECT_EQ(layout[1].live_bytes, 6 * kMiB);
  EXPECT_EQ(layout[1].unseen_bytes(), 14 * kMiB);
}

TEST(BlocksInSegments, BlocksOutsideEverySegmentAreLeftOut) {
  const std::vector<Segment> segments{{.address = 10 * kMiB, .bytes = 2 * kMiB}};
  const std::vector<TensorBlock> blocks{live(9 * kMiB, kMiB), live(12 * kMiB, kMiB)};
  const auto layout = blocks_in_segments(segments, blocks);
  ASSERT_EQ(layout.size(), 1u);
  EXPECT_TRUE(layout[0].blocks.empty());
  EXPECT_EQ(layout[0].unseen_bytes(), 2 * kMiB);
}

TEST(BlocksInSegments, CountsNeverExceedTheSegment) {
  // A block reaching past its segment's end, and two that overlap (a free was lost).
  const std::vector<Segment> segments{{.address = 10 * kMiB, .bytes = 4 * kMiB}};
  const std::vector<TensorBlock> blocks{live(12 * kMiB, 8 * kMiB), cached(10 * kMiB, 3 * kMiB)};
  const auto layout = blocks_in_segments(segments, blocks);
  ASSERT_EQ(layout.size(), 1u);
  EXPECT_EQ(layout[0].live_bytes + layout[0].cached_bytes, 4 * kMiB);
  EXPECT_EQ(layout[0].unseen_bytes(), 0u);
}

TEST(BlocksInSegments, NoSegmentsNoLayout) {
  const std::vector<TensorBlock> blocks{live(12 * kMiB, kMiB)};
  EXPECT_TRUE(blocks_in_segments({}, blocks).empty());
}

} // namespace
} // namespace neutracer
