// SPDX-License-Identifier: Apache-2.0
#pragma once
// The daemon's collectors and loop put together as main.cpp does, over a fake tracer, for
// whole-loop tests without root: no OS programs (OS figures from the fixture /proc), NVML only
// where the test passes one.
#include <memory>
#include <vector>

#include "config/config.h"
#include "daemon/daemon_collectors.h"
#include "daemon/daemon_loop.h"

namespace neutracer::test {

struct TestDaemon {
  // `journal` null: alerts reach only metrics and /api/v1/alerts. `nvml` null: NVML off.
  TestDaemon(const Config &config, CudaTracing &tracer, MetricsPublisher &publisher,
             ServiceNotifier &notifier, JournalWriter *journal = nullptr,
             NvmlApi *nvml_api = nullptr)
      : collectors(config, {.cuda = tracer,
                            .os = nullptr,
                            .nvml = nvml_api != nullptr,
                            .nvml_api = nvml_api,
                            .journal = journal}),
        loop(config.scan_interval, collectors.in_order(), collectors.cuda(), publisher, notifier) {}

  void scan_once() { loop.scan_once(); }

  DaemonCollectors collectors;
  DaemonLoop loop;
};

} // namespace neutracer::test
