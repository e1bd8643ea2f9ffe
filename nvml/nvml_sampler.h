// SPDX-License-Identifier: Apache-2.0
#pragma once
// Samples NVML once per scan: initialises it (retrying now and then after a failure), lists
// the devices once, then reads each device's values in base units. A value NVML cannot give
// is left out and counted by call; NOT_SUPPORTED and missing functions are permanent for that
// device and not asked again. Per traced process it integrates NVML's utilization samples into
// busy GPU time (ProcessGpuTime) and, where accounting mode is on, reads accounting records.
// Pure apart from logging: all NVML access goes through NvmlApi, the wall clock is a setting.
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "nvml/nvml_api.h"
#include "nvml/nvml_sample.h"
#include "nvml/process_gpu_time.h"

namespace neutracer {

class NvmlSampler {
public:
  // After a failed nvmlInit, this many scans pass before the next attempt: a host whose
  // driver is not loaded (yet) costs one failing call a minute at the default 2 s interval.
  static constexpr unsigned kInitRetryScans = 30;

  struct Settings {
    std::chrono::milliseconds scan_interval{2000};
    // Wall-clock microseconds, the clock of NVML's sample stamps.
    std::function<std::uint64_t()> wall_clock_us = default_wall_clock_us;
  };
  static std::uint64_t default_wall_clock_us();

  explicit NvmlSampler(NvmlApi &api); // default settings
  NvmlSampler(NvmlApi &api, Settings settings);

  // `traced`: the traced processes by PID, whose GPU time and accounting records are read.
  NvmlSnapshot sample(const ProcessGpuTime::Traced &traced = {});

  // The devices NVML listed (empty until it has initialised): index, UUID, minor number and
  // PCI bus id, for mapping a process's CUDA devices to NVML indices by UUID.
  const std::vector<NvmlDevice> &devices() const { return devices_; }

private:
  static constexpr unsigned kNoDevice = ~0u;

  bool ready();
  bool list_devices();
  NvmlDeviceSample sample_device(const NvmlDevice &device);
  void sample_health(unsigned index, NvmlDeviceSample &sample);
  // Returns whether the GPU answered (samples or none); nullopt when it does not support it.
  std::optional<bool> sample_process_utilization(unsigned index,
                                                 const ProcessGpuTime::Traced &traced,
                                                 std::uint64_t now_us,
                                                 std::set<std::uint32_t> &busy_pids);
  void sample_accounting(unsigned index, NvmlDeviceSample &sample,
                         const ProcessGpuTime::Traced &traced,
                         const std::set<std::uint32_t> &busy_pids, NvmlSnapshot &snapshot);
  // Runs `query` unless it is known unsupported for this device; on failure counts it, logs
  // it once and returns nullopt. `variant` tells apart queries of one call (tx / rx).
  template <typename Query>
  auto ask(unsigned device, NvmlCall call, int variant, Query query)
      -> std::optional<decltype(query().value)>;
  void record_failure(unsigned device, NvmlCall call, int status);

  NvmlApi &api_;
  Settings settings_;
  ProcessGpuTime gpu_time_;
  bool initialised_ = false;
  bool listed_ = false;
  unsigned scans_until_init_ = 0;
  std::string driver_version_;
  std::vector<NvmlDevice> devices_;
  std::array<std::uint64_t, kNvmlCallNames.size()> errors_{};
  std::set<std::tuple<unsigned, NvmlCall, int>> unsupported_;
  std::set<std::tuple<unsigned, NvmlCall, int>> logged_; // (device, call, status)
  std::set<NvmlCall> missing_functions_;                 // answered FUNCTION_NOT_FOUND
  std::set<unsigned> lost_now_;       // devices that answered GPU_IS_LOST in this scan
  std::vector<unsigned> lost_unopened_; // answered GPU_IS_LOST when listed
};

} // namespace neutracer
