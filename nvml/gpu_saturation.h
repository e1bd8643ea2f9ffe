// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether a process's GPUs were busy all the time at the last NVML sample: a process whose
// launching threads wait on a saturated GPU absorbs what its launch probes cost it, so its
// sampled launch counts need no correction for them (cuda/launch_sampling.h). Pure.
#include <cstdint>

#include "nvml/nvml_sample.h"

namespace neutracer {

// At or above this share of time busy, NVML's GPU utilization is read as saturated. On an
// H100 a launch-bound PyTorch CNN step read 0.30-0.38 and a GPU-bound transformer step 1.0.
inline constexpr double kSaturatedGpuUtilization = 0.95;

// True when NVML lists `pid` on at least one GPU and every GPU listing it was at least
// `busy_ratio` utilized; false when no GPU lists it or a listing GPU gave no utilization.
bool gpus_saturated(const NvmlSnapshot &snapshot, std::uint32_t pid,
                    double busy_ratio = kSaturatedGpuUtilization);

} // namespace neutracer
