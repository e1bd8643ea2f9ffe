// SPDX-License-Identifier: Apache-2.0
#pragma once
// Hands the latest snapshot from the main loop to HTTP threads. A scrape only copies a
// shared pointer under the lock, so it never waits for event processing.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "allocator/allocator_view.h"
#include "common/clock_offset.h"
#include "cuda/memory_timeline.h"
#include "exporters/call_sites_json.h"
#include "exposition/exposition.h"
#include "http/deflated_text.h"
#include "stacks/site_recorder.h"

namespace neutracer {

struct PublishedSnapshot {
  // The scan's families, rendered once by the main loop, and kept deflated: a scrape sends them
  // gzip-encoded as they are instead of rendering 100 000 samples, and at 1 000 processes the
  // snapshot keeps 0.3 MB rather than 7.5 MB of text (BENCHMARKS.md, "The daemon's own cost").
  // Null before the first scan.
  std::shared_ptr<const DeflatedText> metrics_deflated;
  // /api/v1/kernels, gzip-compressed: at 1 000 processes x 50 kernels 6 MB of JSON in 0.3 MB,
  // and the page is read by people now and then, while the snapshot is held all the time.
  // Shared with the main loop, which rebuilds it only when its content changed. Null before
  // the first scan.
  std::shared_ptr<const std::string> kernels_json_gzip;
  // /api/v1/processes, gzip-compressed as well (1.4 MB in 20 KB at 1 000 processes); rebuilt
  // every scan. Null before the first scan.
  std::shared_ptr<const std::string> processes_json_gzip;
  std::string alerts_json = "{\"active\": [], \"recent\": []}\n";
  // Memory timelines are rendered per request, from this scan's copy.
  std::shared_ptr<const std::map<ProcessId, ProcessTimeline>> timelines =
      std::make_shared<const std::map<ProcessId, ProcessTimeline>>();
  std::map<ProcessId, std::string> comms;
  // Call sites per process, rendered per request; a process's view is shared with the main loop
  // until its sites change.
  std::shared_ptr<const std::map<ProcessId, std::shared_ptr<const ProcessSitesView>>> sites =
      std::make_shared<const std::map<ProcessId, std::shared_ptr<const ProcessSitesView>>>();
  StackSettingsView stacks;
  // PyTorch allocator views per process (open, or the last one), for the sites' ranking and the
  // memory page's blocks inside segments.
  std::shared_ptr<const std::map<ProcessId, AllocatorViewSummary>> allocator_views =
      std::make_shared<const std::map<ProcessId, AllocatorViewSummary>>();
  ClockOffset clock; // both clocks at this scan: timelines are drawn as of then
  std::chrono::steady_clock::time_point published_at = std::chrono::steady_clock::now();
  bool from_a_scan = false; // false only for the placeholder served before the first scan
};

class MetricsPublisher {
public:
  void publish(std::shared_ptr<const PublishedSnapshot> snapshot) {
    std::lock_guard lock(mutex_);
    latest_ = std::move(snapshot);
  }
  std::shared_ptr<const PublishedSnapshot> latest() const {
    std::lock_guard lock(mutex_);
    return latest_;
  }

private:
  mutable std::mutex mutex_;
  std::shared_ptr<const PublishedSnapshot> latest_ = std::make_shared<PublishedSnapshot>();
};

} // namespace neutracer
