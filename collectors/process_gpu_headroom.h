// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which GPU's free memory bounds each process, for the detectors: the OOM classifier's
// capacity/fragmentation split and the leak's time until the device is full.
#include <cstdint>
#include <map>

#include "common/process_id.h"
#include "cuda/cuda_state.h"
#include "detectors/device_headroom.h"
#include "nvml/nvml_sample.h"

namespace neutracer {

// Per process, the free memory (NVML total - used) of the GPU holding most of its device,
// managed and VMM memory, with its GPU bytes in use now; a process whose GPU is unknown, or not
// in the NVML snapshot, is left out and its detectors work from the process alone.
std::map<ProcessId, DeviceHeadroom> process_gpu_headroom(const CudaState &state,
                                                         const NvmlSnapshot &nvml);

} // namespace neutracer
