// SPDX-License-Identifier: Apache-2.0
#pragma once
// The main loop: every scan interval, each collector in turn brings its state up to date and
// writes its series, timed; the text and the collectors' documents become the snapshot that
// scrapes read. Between scans it drains the event source. Runs on one thread; HTTP threads only
// read snapshots.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "daemon/service_notifier.h"
#include "exporters/daemon_metrics.h"
#include "exporters/metrics_publisher.h"

namespace neutracer {

class DaemonLoop {
public:
  // `collectors` run in this order (a collector after the ones whose results it reads) and
  // must outlive the loop, as must `events`.
  DaemonLoop(std::chrono::milliseconds scan_interval, std::vector<Collector *> collectors,
             EventSource &events, MetricsPublisher &publisher, ServiceNotifier &notifier);

  // One scan and publish; run() repeats it every scan interval until `stop`, calling
  // `between_polls` (if set) at least every 100 ms: main reports received signals there.
  void scan_once();
  void run(const std::atomic<bool> &stop, const std::function<void()> &between_polls = {});

private:
  bool scan(Collector &collector);
  void write(Collector &collector, MetricSink &sink, std::string &text, bool &success);
  void publish();
  void complain(const Collector &collector, const char *stage, const std::string &what);

  std::chrono::milliseconds scan_interval_;
  std::vector<Collector *> collectors_;
  EventSource &events_;
  MetricsPublisher &publisher_;
  ServiceNotifier &notifier_;
  DaemonBuild build_;
  LoopStatus status_;
  std::map<std::string, bool> failing_; // collectors whose failure was logged, until they recover
  std::size_t metrics_text_bytes_ = 0;  // size of the last rendered /metrics text
};

} // namespace neutracer
