// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which tensor blocks lie inside each of the driver's segments (docs/allocator-view.md): the
// caching allocator carves its segments (cudaMalloc'd ranges) into blocks, and while its view is
// open the sampled blocks are known as live (handed out) or cached (freed back into the pool).
// The rest of a segment is unseen: free, handed out before the view opened, or a small block
// not sampled. Pure.
#include <cstdint>
#include <span>
#include <vector>

#include "allocator/block_ledger.h"

namespace neutracer {

struct Segment {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
};

struct SegmentBlocks {
  Segment segment;
  std::vector<TensorBlock> blocks; // inside the segment, by address
  std::uint64_t live_bytes = 0;
  std::uint64_t cached_bytes = 0;
  std::uint64_t unseen_bytes() const { return segment.bytes - live_bytes - cached_bytes; }
};

// One entry per segment, in address order. `segments` must not overlap (live driver
// allocations never do); both inputs may come in any order. A block counts in the segment that
// holds its first byte, and only its bytes inside that segment count.
std::vector<SegmentBlocks> blocks_in_segments(std::vector<Segment> segments,
                                              std::span<const TensorBlock> blocks);

} // namespace neutracer
