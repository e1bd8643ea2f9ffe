// SPDX-License-Identifier: Apache-2.0
#pragma once
// The daemon's collectors and loop put together as main.cpp does, over a fake tracer, for
// whole-loop tests without root: no NVML, no OS programs (OS figures from the fixture /proc).
#include <optional>

#include "collectors/bpf_maps_collector.h"
#include "collectors/call_sites_collector.h"
#include "collectors/counted_journal.h"
#include "collectors/cuda_collector.h"
#include "collectors/detector_collector.h"
#include "collectors/gpu_health_collector.h"
#include "collectors/os_collector.h"
#include "config/config.h"
#include "daemon/daemon_loop.h"

namespace neutracer::test {

struct TestDaemon {
  // `journal` null: alerts reach only metrics and /api/v1/alerts.
  TestDaemon(const Config &config, CudaTracing &tracer, MetricsPublisher &publisher,
             ServiceNotifier &notifier, JournalWriter *journal = nullptr)
      : journal_(journal), call_sites(config, tracer),
        cuda(cuda_collector_settings(config), tracer, call_sites.recorder()),
        os(config.proc_root, nullptr, SeriesSettings{config.metrics.process_histograms}, cuda),
        gpu_health(gpu_health_settings(config), cuda, nullptr, journal_),
        detectors(detector_settings(config), cuda, os, nullptr, call_sites.recorder(), journal_),
        bpf_maps(nullptr, cuda),
        loop(config.scan_interval, {&cuda, &os, &gpu_health, &detectors, &call_sites, &bpf_maps},
             cuda, publisher, notifier) {}

  void scan_once() { loop.scan_once(); }

  CountedJournal journal_;
  CallSitesCollector call_sites;
  CudaCollector cuda;
  OsCollector os;
  GpuHealthCollector gpu_health;
  DetectorCollector detectors;
  BpfMapsCollector bpf_maps;
  DaemonLoop loop;
};

} // namespace neutracer::test
