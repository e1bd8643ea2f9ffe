// SPDX-License-Identifier: Apache-2.0
#pragma once
// The main loop's own series: what is running, how its scans go, and how each collector did.
// Pure.
#include <cstdint>
#include <string>
#include <vector>

#include "exposition/metric_sink.h"

namespace neutracer {

// neutracer_build_info's labels.
struct DaemonBuild {
  std::string version;
  std::string revision; // git describe of the source tree, "unknown" outside git
  std::string compiler; // "GNU 12.2.0"
  std::string libbpf;   // the libbpf the daemon runs with, "v1.1"
};

// One collector in the last scan.
struct CollectorRun {
  std::string name;
  bool success = false; // its scan finished and its source answered
  double seconds = 0;   // its scan and the writing of its series
};

// A data source behind a collector (neutracer_collector_up).
struct SourceState {
  std::string name;
  bool up = false;
};

struct LoopStatus {
  std::uint64_t scans = 0;
  double scan_seconds = 0; // the last scan, every collector's part
  std::vector<CollectorRun> collectors;
  std::vector<SourceState> sources;
};

void write_daemon_metrics(const DaemonBuild &build, const LoopStatus &status, MetricSink &sink);

} // namespace neutracer
