// SPDX-License-Identifier: Apache-2.0
#include "allocator/segment_blocks.h"

#include <algorithm>

namespace neutracer {

std::vector<SegmentBlocks> blocks_in_segments(std::vector<Segment> segments,
                                              std::span<const TensorBlock> blocks) {
  std::sort(segments.begin(), segments.end(),
            [](const Segment &a, const Segment &b) { return a.address < b.address; });
  std::vector<SegmentBlocks> layout;
  layout.reserve(segments.size());
  for (const auto &segment : segments) {
    SegmentBlocks entry;
    entry.segment = segment;
    layout.push_back(std::move(entry));
  }
  for (const auto &block : blocks) {
    // The last segment starting at or before the block's first byte.
    auto after = std::upper_bound(
        layout.begin(), layout.end(), block.address,
        [](std::uint64_t address, const SegmentBlocks &s) { return address < s.segment.address; });
    if (after == layout.begin())
      continue;
    auto &holder = *std::prev(after);
    const auto offset = block.address - holder.segment.address;
    if (offset >= holder.segment.bytes)
      continue; // between segments: the driver's record of its segment is gone
    const auto inside = std::min(block.bytes, holder.segment.bytes - offset);
    // Clipped, so the counts never exceed the segment (the sizes overlap only on lost frees).
    const auto room = holder.segment.bytes - holder.live_bytes - holder.cached_bytes;
    (block.live ? holder.live_bytes : holder.cached_bytes) += std::min(inside, room);
    holder.blocks.push_back(block);
  }
  for (auto &entry : layout)
    std::sort(entry.blocks.begin(), entry.blocks.end(),
              [](const TensorBlock &a, const TensorBlock &b) { return a.address < b.address; });
  return layout;
}

} // namespace neutracer
