// SPDX-License-Identifier: Apache-2.0
#pragma once
// The blocks inside a process's live segments while its allocator view is open: for the memory
// page (`segment_layout_html`) and `/api/v1/memory` (`segment_layout_json`). Pure.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "allocator/allocator_view.h"
#include "allocator/segment_blocks.h"
#include "cuda/memory_timeline.h"
#include "stacks/site_recorder.h"

namespace neutracer {

// The live driver allocations of `timeline`, each with the view's blocks inside it.
std::vector<SegmentBlocks> segment_layout(const ProcessTimeline &timeline,
                                          const AllocatorViewSummary &view);

// {"open", "blocks_left_out", "segments": [{"address", "bytes", "live_bytes", "cached_bytes",
// "unseen_bytes", "blocks": [{"offset", "bytes", "state": "live"|"cached", "site"}]}]}.
nlohmann::json segment_layout_json(const ProcessTimeline &timeline,
                                   const AllocatorViewSummary &view);

// A section with one bar per segment (the largest first, at most `max_segments`), its blocks
// drawn at their offsets; `sites` names each block's site in its tooltip.
std::string segment_layout_html(const ProcessTimeline &timeline, const AllocatorViewSummary &view,
                                const ProcessSitesView *sites, std::size_t max_segments = 48);

} // namespace neutracer
