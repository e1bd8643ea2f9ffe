// SPDX-License-Identifier: Apache-2.0
#pragma once
// One source of metrics: it owns its domain's state, brings it up to date once per scan, writes
// its series and may publish documents for the HTTP routes. The loop (daemon/daemon_loop.h) runs
// an ordered list of them, timing each; main.cpp says which, in which order. A collector that
// needs another's results is handed a reference to that one when it is made, and comes after it.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "exporters/metrics_publisher.h"
#include "exposition/metric_sink.h"

namespace neutracer {

// Whether a data source behind a collector works (neutracer_collector_up{collector=name}).
struct SourceUp {
  std::string_view name;
  bool up = false;
};

class Collector {
public:
  virtual ~Collector() = default;
  // The `collector` label of its success and duration series.
  virtual std::string_view name() const = 0;
  // Brings the state up to date. False when the source did not answer this scan; the collector
  // logs why (once, not every scan).
  virtual bool scan() = 0;
  // Its series, from the state of the last scan.
  virtual void write(MetricSink &sink) const = 0;
  // Documents served by the HTTP routes.
  virtual void publish(PublishedSnapshot & /*snapshot*/) {}
  // The data sources it reads, for neutracer_collector_up; none by default.
  virtual std::vector<SourceUp> sources() const { return {}; }
  // Heap bytes its state let go of in the last scan: after a large release the loop hands
  // freed pages back to the OS once the new snapshot replaced the old.
  virtual std::size_t bytes_released() const { return 0; }
};

// A source that delivers events between scans (the CUDA probes' ring buffer); the loop drains
// it while it waits for the next scan.
class EventSource {
public:
  virtual ~EventSource() = default;
  // Handles the events that arrived, waiting up to `timeout` for the first.
  virtual void drain_events(std::chrono::milliseconds timeout) = 0;
  // Work due by a time of its own (CLOCK_MONOTONIC ns), done now; the time by which to call
  // again, UINT64_MAX for none.
  virtual std::uint64_t tick() = 0;
};

} // namespace neutracer
