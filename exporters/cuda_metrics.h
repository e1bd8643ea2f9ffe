// SPDX-License-Identifier: Apache-2.0
#pragma once
// Turns CUDA state and the CUDA tracer's health into metric families. Pure.
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/cuda_state.h"
#include "exporters/series_settings.h"
#include "exposition/exposition.h"
#include "exposition/metric_sink.h"

namespace neutracer {

// The CUDA tracer's view of itself at the last scan.
struct TracerHealth {
  std::uint64_t cuda_processes = 0;    // processes that map the driver, read or kept unread
  std::uint64_t attached_libraries = 0;
  std::uint64_t attached_probes = 0;
  std::uint64_t missing_symbols = 0; // over attached libraries
  // Launch and cuKernelGetFunction entries whose first instruction the kernel single-steps.
  std::uint64_t single_stepped_hot_entries = 0;
  std::uint64_t attach_errors = 0;     // since start
  std::uint64_t ring_buffer_drops = 0; // events lost in the kernel (ring buffer full)
  std::uint64_t malformed_events = 0;  // events rejected by the decoder
  std::uint64_t stacks_lost = 0;       // stacks the kernel did not store
  std::uint64_t unreadable_processes = 0;
  std::uint64_t fd_limit_scans = 0; // scans that ran out of file descriptors, since start
};

std::vector<MetricFamily> tracer_families(const TracerHealth &health);
// Per-process CUDA families. Series that would say nothing are left out: memory kinds other
// than `device` that the process never allocated, copy directions it never copied in, sync
// APIs it never called; `settings.process_histograms` off drops the sync wait histogram.
void write_cuda_metrics(const CudaState &state, const SeriesSettings &settings, MetricSink &sink);
// The same families as values.
std::vector<MetricFamily> cuda_families(const CudaState &state,
                                        const SeriesSettings &settings = {});

} // namespace neutracer
