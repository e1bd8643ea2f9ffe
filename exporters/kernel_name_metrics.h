// SPDX-License-Identifier: Apache-2.0
#pragma once
// The kernel name bound: names dropped, bytes of name text held and the most it may hold.
#include <vector>

#include "cuda/cuda_state.h"
#include "exposition/exposition.h"

namespace neutracer {

// Daemon-wide, not per process, so the dropped counter outlives the processes it counted.
std::vector<MetricFamily> kernel_name_families(const CudaState &state);

} // namespace neutracer
