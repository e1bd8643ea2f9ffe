// SPDX-License-Identifier: Apache-2.0
#include "nvml/gpu_saturation.h"

#include <gtest/gtest.h>

namespace neutracer {
namespace {

NvmlDeviceSample device(std::optional<double> utilization, std::vector<std::uint32_t> pids) {
  NvmlDeviceSample sample;
  sample.gpu_utilization_ratio = utilization;
  std::vector<NvmlProcessUsage> processes;
  for (const auto pid : pids)
    processes.push_back({pid, 1 << 20});
  sample.processes = std::move(processes);
  return sample;
}

TEST(GpuSaturation, EveryGpuThatListsTheProcessMustBeBusyAllTheTime) {
  NvmlSnapshot snapshot;
  snapshot.devices = {device(1.0, {10, 20}), device(0.35, {20}), device(0.2, {30})};
  EXPECT_TRUE(gpus_saturated(snapshot, 10));
  EXPECT_FALSE(gpus_saturated(snapshot, 20)) << "one of its GPUs waits for work";
  EXPECT_FALSE(gpus_saturated(snapshot, 30));
  EXPECT_FALSE(gpus_saturated(snapshot, 40)) << "on no GPU: nothing says it waits on one";
  EXPECT_TRUE(gpus_saturated(snapshot, 20, 0.3)); // the threshold is the caller's
}

TEST(GpuSaturation, UnknownOrLostUtilizationIsNotSaturation) {
  NvmlSnapshot snapshot;
  snapshot.devices = {device(std::nullopt, {10}), device(1.0, {20})};
  snapshot.devices[1].lost = true;
  snapshot.devices.push_back(device(1.0, {}));
  snapshot.devices.back().processes.reset(); // NVML could not list its processes
  EXPECT_FALSE(gpus_saturated(snapshot, 10));
  EXPECT_FALSE(gpus_saturated(snapshot, 20));
  EXPECT_FALSE(gpus_saturated(NvmlSnapshot{}, 10));
}

} // namespace
} // namespace neutracer
