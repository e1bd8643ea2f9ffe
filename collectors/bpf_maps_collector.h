// SPDX-License-Identifier: Apache-2.0
#pragma once
// How full the daemon's BPF maps are, CUDA's and the OS programs' alike: entries against
// capacity, and insertions refused because a map was full.
#include "collectors/collector.h"
#include "collectors/cuda_collector.h"
#include "os/os_tracing.h"

namespace neutracer {

class BpfMapsCollector final : public Collector {
public:
  // `os_tracer` null: the OS programs did not load; only CUDA's maps are reported.
  BpfMapsCollector(const OsTracing *os_tracer, const CudaCollector &cuda)
      : os_tracer_(os_tracer), cuda_(cuda) {}

  std::string_view name() const override { return "bpf_maps"; }
  bool scan() override { return true; } // the CUDA collector read its maps; OS's when written
  void write(MetricSink &sink) const override;

private:
  const OsTracing *os_tracer_;
  const CudaCollector &cuda_;
};

} // namespace neutracer
