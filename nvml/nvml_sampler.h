#pragma once
// Samples NVML once per scan: initialises it (retrying now and then after a failure), lists
// the devices once, then reads each device's values in base units. A value NVML cannot give
// is left out and counted by call; NOT_SUPPORTED and missing functions are permanent for that
// device and not asked again. Pure apart from logging: all NVML access goes through NvmlApi.
#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "nvml/nvml_api.h"
#include "nvml/nvml_sample.h"

namespace neutracer {

class NvmlSampler {
public:
  // After a failed nvmlInit, this many scans pass before the next attempt: a host whose
  // driver is not loaded (yet) costs one failing call a minute at the default 2 s interval.
  static constexpr unsigned kInitRetryScans = 30;

  explicit NvmlSampler(NvmlApi &api) : api_(api) {}

  NvmlSnapshot sample();

  // The devices NVML listed (empty until it has initialised): index, UUID, minor number and
  // PCI bus id, for mapping a process's CUDA devices to NVML indices by UUID.
  const std::vector<NvmlDevice> &devices() const { return devices_; }

private:
  static constexpr unsigned kNoDevice = ~0u;

  bool ready();
  bool list_devices();
  NvmlDeviceSample sample_device(const NvmlDevice &device);
  void sample_health(unsigned index, NvmlDeviceSample &sample);
  // Runs `query` unless it is known unsupported for this device; on failure counts it, logs
  // it once and returns nullopt. `variant` tells apart queries of one call (tx / rx).
  template <typename Query>
  auto ask(unsigned device, NvmlCall call, int variant, Query query)
      -> std::optional<decltype(query().value)>;
  void record_failure(unsigned device, NvmlCall call, int status);

  NvmlApi &api_;
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
