// SPDX-License-Identifier: Apache-2.0
#include "nvml/gpu_saturation.h"

#include <algorithm>

namespace neutracer {

bool gpus_saturated(const NvmlSnapshot &snapshot, std::uint32_t pid, double busy_ratio) {
  bool listed = false;
  for (const auto &device : snapshot.devices) {
    if (!device.processes || std::none_of(device.processes->begin(), device.processes->end(),
                                          [&](const auto &usage) { return usage.pid == pid; }))
      continue;
    if (device.lost || !device.gpu_utilization_ratio || *device.gpu_utilization_ratio < busy_ratio)
      return false;
    listed = true;
  }
  return listed;
}

} // namespace neutracer
