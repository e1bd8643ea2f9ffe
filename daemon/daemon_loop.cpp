// SPDX-License-Identifier: Apache-2.0
#include "daemon/daemon_loop.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <malloc.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include "common/libbpf_version.h"
#include "common/monotonic_clock.h"
#include "exposition/text_sink.h"
#include "http/content_encoding.h"
#include "revision.h"
#include "version.h"

namespace neutracer {
namespace {

// Each traced process holds a descriptor (its image), next to one per probe: lift the soft
// limit (1024 under systemd) to the hard one so that a thousand processes fit.
void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
      spdlog::warn("cannot raise the open file limit: {}", std::strerror(errno));
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Freed heap bytes in one scan above which they are handed back to the OS.
constexpr std::size_t kTrimAfterReleasedBytes = std::size_t{1} << 20;

} // namespace

DaemonLoop::DaemonLoop(std::chrono::milliseconds scan_interval, std::vector<Collector *> collectors,
                       EventSource &events, MetricsPublisher &publisher, ServiceNotifier &notifier)
    : scan_interval_(scan_interval), collectors_(std::move(collectors)), events_(events),
      publisher_(publisher),
      notifier_(notifier), build_{kVersion, kRevision, kCompiler, libbpf_version()} {
  raise_open_file_limit();
}

void DaemonLoop::complain(const Collector &collector, const char *stage, const std::string &what) {
  // Once until it recovers: a broken source fails every scan.
  if (failing_.try_emplace(std::string(collector.name()), true).second)
    spdlog::error("collector {} failed to {}: {}", collector.name(), stage, what);
}

bool DaemonLoop::scan(Collector &collector) {
  try {
    return collector.scan();
  } catch (const std::exception &error) {
    complain(collector, "scan", error.what());
  }
  return false;
}

// A collector that throws while writing leaves none of its series: the text is cut back to
// where it began.
void DaemonLoop::write(Collector &collector, MetricSink &sink, std::string &text, bool &success) {
  const auto begun = text.size();
  try {
    collector.write(sink);
    return;
  } catch (const std::exception &error) {
    complain(collector, "write its series", error.what());
  }
  text.resize(begun);
  success = false;
}

void DaemonLoop::scan_once() {
  const auto started = std::chrono::steady_clock::now();
  status_.collectors.clear();
  for (auto *collector : collectors_) {
    const auto begun = std::chrono::steady_clock::now();
    const bool success = scan(*collector);
    status_.collectors.push_back({std::string(collector->name()), success, seconds_since(begun)});
    if (success)
      failing_.erase(std::string(collector->name()));
  }
  status_.scan_seconds = seconds_since(started);
  ++status_.scans;
  publish();
  // What a collector released (an exited process's names, series and documents) is free now
  // that the old snapshot went, but glibc keeps freed heap pages: hand them back after a large
  // release, or the daemon's RSS stays at its peak.
  std::size_t released = 0;
  for (const auto *collector : collectors_)
    released += collector->bytes_released();
  if (released >= kTrimAfterReleasedBytes)
    malloc_trim(0);
}

void DaemonLoop::publish() {
  auto snapshot = std::make_shared<PublishedSnapshot>();
  snapshot->from_a_scan = true;
  snapshot->clock = ClockOffset::now();
  status_.sources.clear();
  for (const auto *collector : collectors_)
    for (const auto &source : collector->sources())
      status_.sources.push_back({std::string(source.name), source.up});
  // Rendered here, once per scan, into a buffer the size of the last one, then kept deflated.
  // The per-process families go straight into the text as they are written: built as
  // MetricFamily values first, their label vectors took more memory than the text
  // (BENCHMARKS.md, "The daemon's own cost").
  std::string metrics_text;
  metrics_text.reserve(metrics_text_bytes_ + metrics_text_bytes_ / 8);
  TextSink text(metrics_text);
  for (std::size_t i = 0; i < collectors_.size(); ++i) {
    auto &run = status_.collectors[i];
    const auto begun = std::chrono::steady_clock::now();
    write(*collectors_[i], text, metrics_text, run.success);
    collectors_[i]->publish(*snapshot);
    run.seconds += seconds_since(begun);
  }
  // Last, so that it carries every collector's time, writing included.
  write_daemon_metrics(build_, status_, text);
  metrics_text_bytes_ = metrics_text.size();
  // Deflated while the previous snapshot is still served: that one holds its text deflated too,
  // so the scan's plain text is the only large copy, and only until here.
  snapshot->metrics_deflated = std::make_shared<const DeflatedText>(deflate_text(metrics_text));
  std::string().swap(metrics_text);
  publisher_.publish(std::move(snapshot));
}

void DaemonLoop::run(const std::atomic<bool> &stop, const std::function<void()> &between_polls) {
  auto next_scan = std::chrono::steady_clock::now();
  while (!stop.load()) {
    if (between_polls)
      between_polls();
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_scan) {
      scan_once();
      notifier_.watchdog_ping();
      next_scan += scan_interval_;
      if (next_scan < now) // fell behind: do not scan back to back
        next_scan = now + scan_interval_;
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        next_scan - std::chrono::steady_clock::now());
    const auto deadline = events_.tick();
    const auto now_ns = monotonic_ns();
    if (deadline != UINT64_MAX)
      wait = std::min(
          wait, std::chrono::milliseconds(deadline > now_ns ? (deadline - now_ns) / 1'000'000 : 0));
    // Short polls keep shutdown prompt; events are consumed as they come.
    events_.drain_events(
        std::clamp(wait, std::chrono::milliseconds(0), std::chrono::milliseconds(100)));
  }
}

} // namespace neutracer
