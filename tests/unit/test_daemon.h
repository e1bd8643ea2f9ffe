// SPDX-License-Identifier: Apache-2.0
#pragma once
// The daemon's collectors and loop put together as main.cpp does, over a fake tracer, for
// whole-loop tests without root: no OS programs (OS figures from the fixture /proc), NVML only
// where the test passes one.
#include <memory>
#include <vector>

#include "collectors/bpf_maps_collector.h"
#include "collectors/call_sites_collector.h"
#include "collectors/counted_journal.h"
#include "collectors/cuda_collector.h"
#include "collectors/detector_collector.h"
#include "collectors/gpu_health_collector.h"
#include "collectors/nvml_collector.h"
#include "collectors/os_collector.h"
#include "config/config.h"
#include "daemon/daemon_loop.h"

namespace neutracer::test {

struct TestDaemon {
  // `journal` null: alerts reach only metrics and /api/v1/alerts. `nvml` null: NVML off.
  TestDaemon(const Config &config, CudaTracing &tracer, MetricsPublisher &publisher,
             ServiceNotifier &notifier, JournalWriter *journal = nullptr,
             NvmlApi *nvml_api = nullptr)
      : journal_(journal), call_sites(config, tracer),
        cuda(cuda_collector_settings(config), tracer, call_sites.recorder()),
        nvml(nvml_api ? std::make_unique<NvmlCollector>(nvml_api, config.scan_interval, cuda)
                      : nullptr),
        os(config.proc_root, nullptr, SeriesSettings{config.metrics.process_histograms}, cuda),
        gpu_health(gpu_health_settings(config), cuda, nvml.get(), journal_),
        detectors(detector_settings(config), cuda, os, nvml.get(), call_sites.recorder(), journal_),
        bpf_maps(nullptr, cuda), loop(config.scan_interval, in_order(), cuda, publisher, notifier) {
    if (nvml)
      cuda.use_gpu_saturation([this](int pid) { return nvml->saturated(pid); });
  }

  void scan_once() { loop.scan_once(); }
  std::vector<Collector *> in_order() {
    std::vector<Collector *> list{&cuda};
    if (nvml)
      list.push_back(nvml.get());
    list.insert(list.end(), {&os, &gpu_health, &detectors, &call_sites, &bpf_maps});
    return list;
  }

  CountedJournal journal_;
  CallSitesCollector call_sites;
  CudaCollector cuda;
  std::unique_ptr<NvmlCollector> nvml;
  OsCollector os;
  GpuHealthCollector gpu_health;
  DetectorCollector detectors;
  BpfMapsCollector bpf_maps;
  DaemonLoop loop;
};

} // namespace neutracer::test
