// SPDX-License-Identifier: Apache-2.0
#include "collectors/detector_collector.h"

#include <spdlog/spdlog.h>

#include "collectors/process_gpu_headroom.h"
#include "common/monotonic_clock.h"
#include "config/config.h"
#include "detectors/alert_journal.h"
#include "exporters/alert_site.h"
#include "exporters/api_json.h"

namespace neutracer {
DetectorSettings detector_settings(const Config &config) {
  const auto &d = config.detectors;
  DetectorSettings settings;
  settings.leak.window_seconds = in_seconds(d.leak_window);
  settings.leak.windows = static_cast<int>(d.leak_windows);
  settings.leak.min_growth_bytes = d.leak_min_growth_bytes;
  settings.leak.fast_window_seconds = in_seconds(d.leak_fast_window);
  settings.leak.fast_windows = static_cast<int>(d.leak_fast_windows);
  settings.leak.fast_min_growth_bytes = d.leak_fast_min_growth_bytes;
  settings.leak.high_water_step_bytes = d.leak_sample_step_bytes;
  settings.leak.probability_threshold = d.leak_probability;
  settings.hang.call_seconds = in_seconds(d.hang_call_threshold);
  settings.hang.stalled_launch_seconds = in_seconds(d.hang_stalled_launches);
  settings.fragmentation.storm_retries = d.retry_storm_retries;
  settings.fragmentation.storm_window_seconds = in_seconds(d.retry_storm_window);
  settings.gate.cooldown_seconds = in_seconds(config.alerts.cooldown);
  settings.gate.max_alerts_per_minute = config.alerts.max_per_minute;
  return settings;
}

DetectorCollector::DetectorCollector(const DetectorSettings &settings, const CudaCollector &cuda,
                                     const OsCollector &os, const NvmlCollector *nvml,
                                     SiteRecorder *sites, CountedJournal &journal,
                                     const AllocatorCollector *allocator)
    : detectors_(settings), cuda_(cuda), os_(os), nvml_(nvml), sites_(sites), journal_(journal),
      allocator_(allocator) {
  if (sites_)
    detectors_.set_site_lookup([this](const ProcessId &id, AlertKind kind, std::uint64_t time_ns) {
      return notice_sites_of(id, kind, time_ns);
    });
}

bool DetectorCollector::scan() {
  static const NvmlSnapshot kNoNvml;
  const auto &state = cuda_.state();
  const auto &changes = cuda_.memory_changes();
  for (const auto &[id, list] : changes)
    if (sites_)
      timeline_.record(id, list, [&, id = id](const MemoryChange &change) {
        return sites_->allocation_site(id, change.stack_id, change.python_stack);
      });
    else
      timeline_.record(id, list);
  if (allocator_)
    detectors_.set_allocator_leaks(allocator_->rising());
  // The free memory read at the previous scan: before this scan's changes
  // (detectors/device_headroom.h).
  detectors_.scan(state, changes, os_.cpu_seconds(), monotonic_ns(), headroom_);
  headroom_ = process_gpu_headroom(state, nvml_ ? nvml_->snapshot() : kNoNvml);
  record_leak_samples();
  note_exits();
  for (const auto &notice : detectors_.take_notices()) {
    const auto entry = journal_entry(notice);
    spdlog::warn("alert: {}", entry.message);
    journal_.write(entry);
  }
  delivery_.journal_errors = journal_.errors();
  return true;
}

void DetectorCollector::note_exits() {
  std::vector<ProcessId> exited_ids;
  for (const auto &exited : cuda_.exited()) {
    exited_ids.push_back(exited.id);
    if (exited.gpu_bytes_in_use == 0)
      continue;
    ++delivery_.exited_holding_memory;
    delivery_.bytes_held_at_exit += exited.gpu_bytes_in_use;
    spdlog::info("{} (pid {}) {} holding {} bytes of GPU memory (freed by the driver)", exited.comm,
                 exited.id.pid, exited.replaced ? "exec'd a new program" : "exited",
                 exited.gpu_bytes_in_use);
    journal_.write(exit_journal_entry(exited));
  }
  detectors_.forget(exited_ids);
  for (const auto &id : exited_ids) {
    timeline_.forget(id);
    if (sites_)
      sites_->forget(id);
  }
}

// Which live blocks the leak detector sampled: read only where its samples changed (a sample's
// site is fixed while the block lives, so the same samples count the same).
void DetectorCollector::record_leak_samples() {
  if (!sites_)
    return;
  std::erase_if(leak_samples_seen_,
                [&](const auto &entry) { return !detectors_.findings().contains(entry.first); });
  for (const auto &[id, findings] : detectors_.findings()) {
    const std::pair counts{findings.leak.sampled, findings.leak.unfreed};
    auto [seen, added] = leak_samples_seen_.try_emplace(id, counts);
    if (!added && seen->second == counts)
      continue;
    seen->second = counts;
    sites_->set_leak_samples(id, detectors_.leak_sample_addresses(id));
  }
}

std::vector<NoticeSite> DetectorCollector::notice_sites_of(const ProcessId &id, AlertKind kind,
                                                           std::uint64_t time_ns) const {
  std::vector<NoticeSite> notices;
  if (kind == AlertKind::memory_leak) {
    if (auto allocator = allocator_leak_sites(id); !allocator.empty())
      return allocator;
    for (const Site *site : sites_->leak_sites(id, kLeakNoticeSites))
      if (auto notice = notice_site(*site)) {
        notice->live_bytes = site->counts.live_bytes;
        notice->view = "driver";
        notices.push_back(std::move(*notice));
      }
    return notices;
  }
  const auto purpose = kind == AlertKind::hang ? SitePurpose::wait : SitePurpose::failure;
  if (const Site *site = sites_->site_for(id, purpose, time_ns))
    if (auto notice = notice_site(*site))
      notices.push_back(std::move(*notice));
  return notices;
}

std::vector<NoticeSite> DetectorCollector::allocator_leak_sites(const ProcessId &id) const {
  std::vector<NoticeSite> notices;
  const AllocatorView *view = allocator_ ? allocator_->view(id) : nullptr;
  if (!view)
    return notices;
  for (const auto &ranked : view->ranking) {
    if (notices.size() == kLeakNoticeSites || ranked.survivor_bytes == 0)
      break;
    if (const Site *site = sites_->site(id, ranked.site))
      if (auto notice = notice_site(*site)) {
        notice->live_bytes = ranked.survivor_bytes;
        notice->view = "allocator";
        notices.push_back(std::move(*notice));
      }
  }
  return notices;
}

void DetectorCollector::write(MetricSink &sink) const {
  write_detector_metrics(detectors_, delivery_, sink);
}

void DetectorCollector::publish(PublishedSnapshot &snapshot) {
  snapshot.processes_json_gzip =
      std::make_shared<const std::string>(processes_json_gzip(cuda_.state(), detectors_));
  snapshot.timelines =
      std::make_shared<const std::map<ProcessId, ProcessTimeline>>(timeline_.processes());
  snapshot.alerts_json = alerts_json(detectors_, snapshot.clock);
}

} // namespace neutracer
