// SPDX-License-Identifier: Apache-2.0
#pragma once
// Per traced process, what NVML says of its GPU use: busy time integrated from the per-process
// utilization samples, and the accounting records of GPUs with accounting mode on. Pure.
#include <vector>

#include "cuda/cuda_state.h"
#include "exposition/exposition.h"
#include "nvml/nvml_sample.h"

namespace neutracer {

// Nothing when NVML is not in use; otherwise every family, with HELP and TYPE even when empty.
// A process has busy-time series from its first utilization sample on a GPU on, accounting
// series only on GPUs with accounting mode on; processes `state` no longer has are left out.
std::vector<MetricFamily> process_gpu_time_families(const NvmlSnapshot &snapshot,
                                                    const CudaState &state);

} // namespace neutracer
