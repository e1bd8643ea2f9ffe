// SPDX-License-Identifier: Apache-2.0
#include "collectors/process_gpu_headroom.h"

#include <string>

namespace neutracer {

std::map<ProcessId, DeviceHeadroom> process_gpu_headroom(const CudaState &state,
                                                         const NvmlSnapshot &nvml) {
  // gpu label (host index, as NVML numbers devices) -> free bytes
  std::map<std::string, std::uint64_t> free_by_gpu;
  for (const auto &sample : nvml.devices)
    if (sample.memory_total_bytes && sample.memory_used_bytes &&
        *sample.memory_total_bytes >= *sample.memory_used_bytes)
      free_by_gpu[std::to_string(sample.device.index)] =
          *sample.memory_total_bytes - *sample.memory_used_bytes;
  std::map<ProcessId, DeviceHeadroom> result;
  if (free_by_gpu.empty())
    return result;
  for (const auto &[id, process] : state.processes()) {
    int busiest = kUnknownDevice;
    std::uint64_t most = 0;
    for (const auto &[device, counters] : process.devices) {
      const auto bytes = counters.gpu_bytes_in_use();
      if (device != kUnknownDevice && (busiest == kUnknownDevice || bytes > most)) {
        busiest = device;
        most = bytes;
      }
    }
    if (busiest == kUnknownDevice)
      continue;
    if (const auto free = free_by_gpu.find(process.gpu_label(busiest)); free != free_by_gpu.end())
      result[id] = {free->second, process.gpu_bytes_in_use()};
  }
  return result;
}

} // namespace neutracer
