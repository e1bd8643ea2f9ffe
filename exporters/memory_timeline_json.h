// SPDX-License-Identifier: Apache-2.0
#pragma once
// A process's GPU memory timeline as JSON (`/api/v1/memory?pid=N`): every recorded allocation
// with its size and lifetime, and every failed allocation. For scripts and for recording a
// process's allocation stream to replay it against the detectors. Pure.
#include <cstdint>
#include <string>

#include "allocator/allocator_view.h"
#include "common/clock_offset.h"
#include "cuda/memory_timeline.h"

namespace neutracer {

// Times are CLOCK_MONOTONIC nanoseconds, like `now_ns`; `now_unix_seconds` is the same moment
// in Unix time, to convert them. `freed_ns` is 0 for live blocks.
// `allocator`, when its view is open, adds "allocator_view": the blocks inside each live
// segment (exporters/segment_layout.h).
std::string memory_timeline_json(const ProcessId &id, const std::string &comm,
                                 const ProcessTimeline &timeline, const ClockOffset &clock,
                                 const AllocatorViewSummary *allocator = nullptr);

} // namespace neutracer
