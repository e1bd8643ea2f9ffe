// SPDX-License-Identifier: Apache-2.0
#pragma once
// Per-GPU figures from NVML, once per scan (~40 ms per GPU: PCIe throughput is measured over
// 20 ms per direction), with the GPU time of each traced process.
#include <optional>
#include <vector>

#include "collectors/collector.h"
#include "collectors/cuda_collector.h"
#include "nvml/nvml_sampler.h"

namespace neutracer {

class NvmlCollector final : public Collector {
public:
  // `nvml` null: NVML is enabled but could not be loaded; the collector says nvml is down.
  NvmlCollector(NvmlApi *nvml, std::chrono::milliseconds scan_interval, const CudaCollector &cuda);

  std::string_view name() const override { return "nvml"; }
  bool scan() override;
  void write(MetricSink &sink) const override;
  std::vector<SourceUp> sources() const override;

  // The last scan's sample (empty and not ready without NVML).
  const NvmlSnapshot &snapshot() const { return snapshot_; }
  // NVML's devices (index, UUID, minor number, PCI bus id); empty without NVML.
  const std::vector<NvmlDevice> &devices() const;
  // Whether every GPU `pid` uses was busy at the last sample.
  bool saturated(int pid) const;

private:
  const CudaCollector &cuda_;
  std::optional<NvmlSampler> sampler_;
  NvmlSnapshot snapshot_;
};

} // namespace neutracer
