// SPDX-License-Identifier: Apache-2.0
#include "collectors/nvml_collector.h"

#include "exporters/gpu_health_metrics.h"
#include "exporters/nvml_metrics.h"
#include "exporters/process_gpu_time_metrics.h"
#include "nvml/gpu_saturation.h"

namespace neutracer {

NvmlCollector::NvmlCollector(NvmlApi *nvml, std::chrono::milliseconds scan_interval,
                             const CudaCollector &cuda)
    : cuda_(cuda) {
  if (nvml != nullptr)
    sampler_.emplace(*nvml, NvmlSampler::Settings{scan_interval});
}

bool NvmlCollector::scan() {
  if (!sampler_)
    return false;
  ProcessGpuTime::Traced traced;
  for (const auto &[id, process] : cuda_.state().processes())
    traced.emplace(static_cast<std::uint32_t>(id.pid), id);
  snapshot_ = sampler_->sample(traced);
  return snapshot_.ready;
}

void NvmlCollector::write(MetricSink &sink) const {
  sink.write(nvml_families(snapshot_));
  sink.write(nvml_health_families(snapshot_));
  sink.write(process_gpu_time_families(snapshot_, cuda_.state()));
}

std::vector<SourceUp> NvmlCollector::sources() const {
  std::vector<SourceUp> up{{"nvml", snapshot_.ready}};
  if (snapshot_.process_utilization_up)
    up.push_back({"nvml_process_utilization", *snapshot_.process_utilization_up});
  return up;
}

const std::vector<NvmlDevice> &NvmlCollector::devices() const {
  static const std::vector<NvmlDevice> kNone;
  return sampler_ ? sampler_->devices() : kNone;
}

bool NvmlCollector::saturated(int pid) const {
  return gpus_saturated(snapshot_, static_cast<std::uint32_t>(pid));
}

} // namespace neutracer
