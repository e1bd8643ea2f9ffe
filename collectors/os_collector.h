// SPDX-License-Identifier: Apache-2.0
#pragma once
// Per-process OS figures of the traced processes: /proc (CPU, memory, threads, IO) and, where
// its BPF programs loaded, the scheduler, block IO and network counters of OsTracing.
#include <map>

#include "collectors/collector.h"
#include "collectors/cuda_collector.h"
#include "os/os_sampler.h"
#include "os/os_tracing.h"

namespace neutracer {

class OsCollector final : public Collector {
public:
  // `tracer` null: its BPF programs did not load; the /proc figures remain.
  OsCollector(const std::string &proc_root, OsTracing *tracer, SeriesSettings series,
              const CudaCollector &cuda);

  std::string_view name() const override { return "os"; }
  bool scan() override;
  void write(MetricSink &sink) const override;
  std::vector<SourceUp> sources() const override;

  // Each traced process's CPU time (user + system) at this scan.
  std::map<ProcessId, double> cpu_seconds() const;

private:
  ProcFs procfs_;
  OsTracing *tracer_;
  SeriesSettings series_;
  const CudaCollector &cuda_;
  std::map<int, ProcessOsSample> samples_;
  std::map<std::uint32_t, OsCounters> counters_;
};

} // namespace neutracer
