// SPDX-License-Identifier: Apache-2.0
#pragma once
// How launches are counted: the daemon's mode, and per process the share of time counted.
#include <string_view>
#include <vector>

#include "cuda/cuda_state.h"
#include "cuda/launch_scheduler.h"
#include "exposition/exposition.h"
#include "exposition/metric_sink.h"

namespace neutracer {

// `views` is empty in exact mode: every process is then counted all the time.
// `trap_seconds`: the measured cost of one counted launch (0: not measured, or exact mode).
void write_launch_counting_metrics(std::string_view mode, const CudaState &state,
                                   const std::vector<LaunchProcessView> &views, double trap_seconds,
                                   MetricSink &sink);
// The same families as values.
std::vector<MetricFamily> launch_counting_families(std::string_view mode, const CudaState &state,
                                                   const std::vector<LaunchProcessView> &views,
                                                   double trap_seconds = 0);

} // namespace neutracer
