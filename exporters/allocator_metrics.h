// SPDX-License-Identifier: Apache-2.0
#pragma once
// The allocator view's series (docs/allocator-view.md, docs/metrics.md): views opened and
// failed, and per process with a view, its live tensor bytes and whether they keep rising.
#include <array>
#include <cstdint>
#include <map>

#include "allocator/allocator_view.h"
#include "common/process_id.h"
#include "cuda/cuda_state.h"
#include "exposition/metric_sink.h"

namespace neutracer {

struct AllocatorViewCounts {
  std::array<std::uint64_t, 2> opened{};                      // by InvestigationReason
  std::array<std::uint64_t, kAllocatorViewFailures> failed{}; // by AllocatorViewFailure
  std::uint64_t late_events = 0; // block events that arrived after their view closed
};

// `state` gives each process's labels; views of processes it no longer has are left out.
void write_allocator_metrics(const std::map<ProcessId, AllocatorView> &views,
                             const AllocatorViewCounts &counts, const CudaState &state,
                             MetricSink &sink);

} // namespace neutracer
