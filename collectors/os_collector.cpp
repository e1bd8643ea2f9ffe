// SPDX-License-Identifier: Apache-2.0
#include "collectors/os_collector.h"

#include <algorithm>
#include <unistd.h>

#include "exporters/metric_builders.h"
#include "exporters/os_metrics.h"

namespace neutracer {

OsCollector::OsCollector(const std::string &proc_root, OsTracing *tracer, SeriesSettings series,
                         const CudaCollector &cuda)
    : procfs_(proc_root), tracer_(tracer), series_(series), cuda_(cuda) {}

bool OsCollector::scan() {
  const long ticks_per_second = std::max(1L, sysconf(_SC_CLK_TCK));
  const auto ns_per_tick = 1'000'000'000ull / static_cast<std::uint64_t>(ticks_per_second);
  const auto &processes = cuda_.state().processes();
  std::vector<int> pids;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> traced;
  for (const auto &[id, process] : processes) {
    pids.push_back(id.pid);
    traced.emplace_back(static_cast<std::uint32_t>(id.pid), id.start_ticks * ns_per_tick);
  }
  samples_ = sample_processes(procfs_, pids, ticks_per_second, sysconf(_SC_PAGESIZE));
  // A PID reused since discovery is another process: its figures are not ours.
  std::erase_if(samples_, [&](const auto &entry) {
    return !processes.contains(ProcessId{entry.first, entry.second.start_ticks});
  });
  if (tracer_ != nullptr) {
    tracer_->set_traced(traced);
    counters_ = tracer_->read();
  }
  return true;
}

void OsCollector::write(MetricSink &sink) const {
  const auto &processes = cuda_.state().processes();
  std::vector<OsProcessView> views;
  views.reserve(processes.size());
  for (const auto &[id, process] : processes) {
    OsProcessView view{process_labels(id, process.comm, process.container), std::nullopt,
                       std::nullopt};
    if (const auto sample = samples_.find(id.pid); sample != samples_.end())
      view.proc = sample->second;
    if (const auto counters = counters_.find(static_cast<std::uint32_t>(id.pid));
        counters != counters_.end())
      view.bpf = counters->second;
    views.push_back(std::move(view));
  }
  write_os_metrics(views, series_, sink);
  if (tracer_ != nullptr)
    sink.write({os_network_source_family(tracer_->stats())});
}

std::vector<SourceUp> OsCollector::sources() const { return {{"os_tracer", tracer_ != nullptr}}; }

std::map<ProcessId, double> OsCollector::cpu_seconds() const {
  std::map<ProcessId, double> seconds;
  for (const auto &[pid, sample] : samples_)
    seconds[ProcessId{pid, sample.start_ticks}] =
        sample.user_cpu_seconds + sample.system_cpu_seconds;
  return seconds;
}

} // namespace neutracer
