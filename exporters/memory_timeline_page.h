// SPDX-License-Identifier: Apache-2.0
#pragma once
// The memory layout timeline (`/memory?pid=N`): each GPU allocation of a process as a bar
// from its allocation to its free, stacked by address, with failed allocations marked, along a
// wall-clock (UTC) axis. Pure: the page is an HTML document with an inline SVG, and a small
// script that reloads the timeline every few seconds while the page is open.
#include <cstdint>
#include <map>
#include <string>

#include "allocator/allocator_view.h"
#include "common/clock_offset.h"
#include "cuda/memory_timeline.h"
#include "stacks/site_recorder.h"

namespace neutracer {

// `sites`, when given, names each block's and failure's call site in its tooltip.
// `clock`: now, on both clocks (the blocks' times are CLOCK_MONOTONIC).
std::string memory_timeline_svg(const ProcessTimeline &timeline, const ClockOffset &clock,
                                const ProcessSitesView *sites = nullptr);
// `allocator`, when its view is open, adds the blocks inside each live segment.
std::string memory_timeline_page(const ProcessId &id, const std::string &comm,
                                 const ProcessTimeline &timeline, const ClockOffset &clock,
                                 const ProcessSitesView *sites = nullptr,
                                 const AllocatorViewSummary *allocator = nullptr);
// The list of processes with a timeline, linking to each page.
std::string memory_timeline_index(const std::map<ProcessId, ProcessTimeline> &timelines,
                                  const std::map<ProcessId, std::string> &comms);

} // namespace neutracer
