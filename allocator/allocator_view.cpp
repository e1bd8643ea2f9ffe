// SPDX-License-Identifier: Apache-2.0
#include "allocator/allocator_view.h"

#include <algorithm>
#include <cstddef>

#include "common/enum_names.h"

namespace neutracer {

std::string_view allocator_view_failure_name(AllocatorViewFailure failure) {
  static constexpr std::array<std::string_view, kAllocatorViewFailures> kNames = {
      "no_library", "no_probes", "attach"};
  static_assert(kNames.size() == enum_count(AllocatorViewFailure::attach));
  return enum_name(failure, kNames);
}

AllocatorViewSummary summary_of(const AllocatorView &view, std::size_t max_blocks) {
  AllocatorViewSummary summary;
  summary.open = view.open;
  summary.reason = view.reason;
  summary.live_bytes = view.ledger.live_bytes();
  summary.ranking = view.ranking;
  if (!view.open)
    return summary;
  summary.blocks = view.ledger.blocks();
  if (summary.blocks.size() > max_blocks) {
    summary.blocks_left_out = summary.blocks.size() - max_blocks;
    const auto larger = [](const TensorBlock &a, const TensorBlock &b) {
      return a.bytes > b.bytes;
    };
    std::nth_element(summary.blocks.begin(),
                     summary.blocks.begin() + static_cast<std::ptrdiff_t>(max_blocks),
                     summary.blocks.end(), larger);
    summary.blocks.resize(max_blocks);
    std::sort(summary.blocks.begin(), summary.blocks.end(),
              [](const TensorBlock &a, const TensorBlock &b) { return a.address < b.address; });
  }
  return summary;
}

} // namespace neutracer
