// SPDX-License-Identifier: Apache-2.0
#pragma once
// A process's GPU memory timeline as JSON (`/api/v1/memory?pid=N`): every recorded allocation
// with its size and lifetime, and every failed allocation. For scripts and for recording a
// process's allocation stream to replay it against the detectors. Pure.
#include <cstdint>
#include <string>

#include "common/clock_offset.h"
#include "cuda/memory_timeline.h"

namespace neutracer {

// Times are CLOCK_MONOTONIC nanoseconds, like `now_ns`; `now_unix_seconds` is the same moment
// in Unix time, to convert them. `freed_ns` is 0 for live blocks.
std::string memory_timeline_json(const ProcessId &id, const std::string &comm,
                                 const ProcessTimeline &timeline, const ClockOffset &clock);

} // namespace neutracer
