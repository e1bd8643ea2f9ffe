// SPDX-License-Identifier: Apache-2.0
#pragma once
// Turns an NVML sample into metric families (neutracer_gpu_*, neutracer_nvml_*). Pure.
#include <vector>

#include "exposition/exposition.h"
#include "nvml/nvml_sample.h"

namespace neutracer {

// Nothing when NVML is not in use (disabled or not installed). Otherwise every family, in a
// fixed order, with HELP and TYPE even when empty; a device's series exist only for the
// values NVML gave.
std::vector<MetricFamily> nvml_families(const NvmlSnapshot &snapshot);

} // namespace neutracer
