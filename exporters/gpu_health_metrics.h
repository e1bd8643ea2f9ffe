// SPDX-License-Identifier: Apache-2.0
#pragma once
// GPU health and collector health as metric families: NVML's ECC, row remapping, page
// retirement, clock throttling and lost-GPU values; the driver's Xid reports from the kernel
// log, per GPU and per traced process; whether each data source works. Pure.
#include <optional>
#include <vector>

#include "cuda/cuda_state.h"
#include "exposition/exposition.h"
#include "gpuhealth/gpu_health_monitor.h"
#include "nvml/nvml_sample.h"

namespace neutracer {

// Nothing when NVML is not in use. A family whose NVML function the driver's library lacks is
// left out whole (neutracer_nvml_function_available says so); one a GPU does not support has
// no series for that GPU.
std::vector<MetricFamily> nvml_health_families(const NvmlSnapshot &snapshot);

// Nothing when the kernel log is not read (gpu_health.read_kernel_log: false).
std::vector<MetricFamily> xid_families(const GpuHealthMonitor &monitor, const CudaState &state);


} // namespace neutracer
