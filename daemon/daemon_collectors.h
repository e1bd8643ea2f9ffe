// SPDX-License-Identifier: Apache-2.0
#pragma once
// The daemon's collectors, made from the config and the tracers, in the order they run: the one
// place that says what the daemon exports. main.cpp composes the daemon with it, and so do the
// whole-loop tests (over a fake tracer), so the two cannot list different collectors.
#include <memory>
#include <vector>

#include "collectors/allocator_collector.h"
#include "collectors/bpf_maps_collector.h"
#include "collectors/call_sites_collector.h"
#include "collectors/counted_journal.h"
#include "collectors/cuda_collector.h"
#include "collectors/detector_collector.h"
#include "collectors/gpu_health_collector.h"
#include "collectors/nccl_collector.h"
#include "collectors/nccl_ras_collector.h"
#include "collectors/nvml_collector.h"
#include "collectors/os_collector.h"
#include "config/config.h"

namespace neutracer {

// What the collectors read from, besides the config.
struct CollectorSources {
  CudaTracing &cuda;
  OsTracing *os = nullptr;          // null: OS figures from /proc alone
  bool nvml = false;                // whether there is an NVML collector at all
  NvmlApi *nvml_api = nullptr;      // null with `nvml`: the library could not be loaded
  JournalWriter *journal = nullptr; // null: alerts reach metrics and the API only
};

class DaemonCollectors {
public:
  DaemonCollectors(const Config &config, const CollectorSources &sources);
  DaemonCollectors(const DaemonCollectors &) = delete;
  DaemonCollectors &operator=(const DaemonCollectors &) = delete;

  // Each comes after those whose results it reads.
  std::vector<Collector *> in_order();
  CudaCollector &cuda() { return cuda_; }
  AllocatorCollector &allocator() { return allocator_; }
  NcclCollector &nccl() { return nccl_; }

private:
  CountedJournal journal_;
  CallSitesCollector call_sites_;
  CudaCollector cuda_;
  std::unique_ptr<NvmlCollector> nvml_;
  OsCollector os_;
  GpuHealthCollector gpu_health_;
  AllocatorCollector allocator_;
  NcclCollector nccl_;
  std::unique_ptr<NcclRasCollector> nccl_ras_; // null unless nccl.ras_enabled
  DetectorCollector detectors_;
  BpfMapsCollector bpf_maps_;
};

} // namespace neutracer
