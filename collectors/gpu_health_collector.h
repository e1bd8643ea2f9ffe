// SPDX-License-Identifier: Apache-2.0
#pragma once
// GPU faults: Xid reports from the kernel log and NVML's health values, counted, tied to the
// traced process the driver names, and journaled.
#include "collectors/collector.h"
#include "collectors/counted_journal.h"
#include "collectors/cuda_collector.h"
#include "collectors/nvml_collector.h"
#include "gpuhealth/gpu_health_monitor.h"

namespace neutracer {

struct Config;
// The config's gpu_health.* keys.
GpuHealthMonitor::Settings gpu_health_settings(const Config &config);

class GpuHealthCollector final : public Collector {
public:
  // `nvml` null: NVML off; GPUs are then numbered from the driver's own list.
  GpuHealthCollector(const GpuHealthMonitor::Settings &settings, const CudaCollector &cuda,
                     const NvmlCollector *nvml, CountedJournal &journal);

  std::string_view name() const override { return "gpu_health"; }
  bool scan() override;
  void write(MetricSink &sink) const override;
  std::vector<SourceUp> sources() const override;

private:
  GpuHealthMonitor monitor_;
  const CudaCollector &cuda_;
  const NvmlCollector *nvml_;
  CountedJournal &journal_;
};

} // namespace neutracer
