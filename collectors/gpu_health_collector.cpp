// SPDX-License-Identifier: Apache-2.0
#include "collectors/gpu_health_collector.h"

#include <set>

#include "common/monotonic_clock.h"
#include "config/config.h"
#include "exporters/gpu_health_metrics.h"

namespace neutracer {

GpuHealthMonitor::Settings gpu_health_settings(const Config &config) {
  return {config.gpu_health.kmsg_path, config.gpu_health.read_kernel_log,
          config.gpu_health.xid_journal_per_minute};
}

GpuHealthCollector::GpuHealthCollector(const GpuHealthMonitor::Settings &settings,
                                       const CudaCollector &cuda, const NvmlCollector *nvml,
                                       CountedJournal &journal)
    : monitor_(settings), cuda_(cuda), nvml_(nvml), journal_(journal) {}

bool GpuHealthCollector::scan() {
  static const NvmlSnapshot kNoNvml;
  std::vector<std::pair<std::string, int>> addresses;
  if (nvml_ != nullptr)
    for (const auto &device : nvml_->devices())
      addresses.emplace_back(device.pci_bus_id, static_cast<int>(device.index));
  if (addresses.empty()) // without NVML, the driver's own list numbers GPUs the same way
    for (const auto &gpu : cuda_.host_gpus())
      addresses.emplace_back(gpu.pci_bus_id, gpu.index);
  const auto &processes = cuda_.state().processes();
  std::set<ProcessId> live;
  for (const auto &[id, process] : processes)
    live.insert(id);
  const auto traced = [&processes](std::uint32_t pid) -> std::optional<XidProcess> {
    for (const auto &[id, process] : processes)
      if (id.pid == static_cast<int>(pid))
        return XidProcess{id, process.comm, process.container.identity.id};
    return std::nullopt;
  };
  for (const auto &entry : monitor_.scan(nvml_ ? nvml_->snapshot() : kNoNvml,
                                         GpuAddressBook(addresses), traced, live, monotonic_ns()))
    journal_.write(entry);
  return !monitor_.reads_kernel_log() || monitor_.kernel_log().healthy;
}

void GpuHealthCollector::write(MetricSink &sink) const {
  sink.write(xid_families(monitor_, cuda_.state()));
}

std::vector<SourceUp> GpuHealthCollector::sources() const {
  if (!monitor_.reads_kernel_log())
    return {};
  return {{"kernel_log", monitor_.kernel_log().healthy}};
}

} // namespace neutracer
