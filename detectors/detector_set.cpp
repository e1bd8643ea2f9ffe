// SPDX-License-Identifier: Apache-2.0
#include "detectors/detector_set.h"

#include <chrono>
#include <cstdio>

#include "common/human_bytes.h"
#include "cuda/cuda_api_table.h"
#include "cuda/cuda_state.h"

namespace neutracer {
namespace {

// "1.50 GiB": alerts are read by people first.
std::string human_bytes(double bytes) { return neutracer::human_bytes(bytes, 2); }

std::string fixed(double value, int digits) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// What a leak notice adds after its top site: " (1.20 GiB live from there; also 300.00 MiB from
// g (a.py:30), ...)", and LEAK_SITES "f (a.py:51)=1288490188; g (a.py:30)=314572800".
std::string leak_sites_text(const std::vector<NoticeSite> &sites,
                            std::vector<std::pair<std::string, std::string>> &fields) {
  if (sites.front().live_bytes == 0)
    return {};
  std::string text =
      " (" + human_bytes(static_cast<double>(sites.front().live_bytes)) + " live from there";
  std::string field;
  for (std::size_t i = 0; i < sites.size(); ++i) {
    if (i > 0)
      text += (i == 1 ? "; also " : ", ") + human_bytes(static_cast<double>(sites[i].live_bytes)) +
              " from " + sites[i].text;
    field += (i > 0 ? "; " : "") + sites[i].text + "=" + std::to_string(sites[i].live_bytes);
  }
  fields.emplace_back("LEAK_SITES", std::move(field));
  if (!sites.front().view.empty())
    fields.emplace_back("LEAK_SITES_VIEW", sites.front().view);
  return text + ")";
}

NoticeText leak_notice(const ProcessFindings &findings) {
  if (findings.leak.allocator_view) {
    const auto growth = findings.leak.allocator_growth_bytes_per_second;
    return {"live tensors grow by " + human_bytes(growth) +
                "/s behind PyTorch's caching allocator (allocator view); " +
                human_bytes(static_cast<double>(findings.gpu_bytes_in_use)) + " in use",
            {{"GPU_BYTES_IN_USE", std::to_string(findings.gpu_bytes_in_use)},
             {"GROWTH_BYTES_PER_SECOND", fixed(growth, 0)},
             {"LEAK_VIEW", "allocator"}}};
  }
  NoticeText text{"GPU memory grows by " + human_bytes(findings.leak.growth_bytes_per_second) +
                      "/s and is not freed (probability " + fixed(findings.leak.probability, 2) +
                      "); " + human_bytes(static_cast<double>(findings.gpu_bytes_in_use)) +
                      " in use",
                  {{"GPU_BYTES_IN_USE", std::to_string(findings.gpu_bytes_in_use)},
                   {"GROWTH_BYTES_PER_SECOND", fixed(findings.leak.growth_bytes_per_second, 0)},
                   {"LEAK_PROBABILITY", fixed(findings.leak.probability, 3)}}};
  if (findings.leak.seconds_until_full)
    text.fields.emplace_back("SECONDS_UNTIL_FULL", fixed(*findings.leak.seconds_until_full, 0));
  return text;
}

NoticeText fragmentation_notice(const ProcessFindings &findings) {
  return {std::to_string(findings.alloc_retries) + " allocator retries; the process holds " +
              human_bytes(static_cast<double>(findings.gpu_bytes_in_use)) + " in " +
              std::to_string(findings.segments) + " pieces (fragmentation ratio " +
              fixed(findings.fragmentation_ratio, 2) + ")",
          {{"GPU_BYTES_IN_USE", std::to_string(findings.gpu_bytes_in_use)},
           {"ALLOC_RETRIES", std::to_string(findings.alloc_retries)},
           {"FRAGMENTATION_RATIO", fixed(findings.fragmentation_ratio, 3)}}};
}

NoticeText hang_notice(const ProcessFindings &findings) {
  const auto api = std::string(api_name(static_cast<nt_api>(findings.hang.call_api)));
  const auto stalled = fixed(findings.hang.stalled_seconds, 0);
  return {findings.hang.reason == HangReason::call_in_progress
              ? api + " has not returned for " + stalled + " s"
              : "no kernel launched for " + stalled + " s while the process spins on a CPU",
          {{"HANG_REASON", std::string(hang_reason_name(findings.hang.reason))},
           {"STALLED_SECONDS", stalled},
           {"CUDA_API", api},
           {"GPU_BYTES_IN_USE", std::to_string(findings.gpu_bytes_in_use)}}};
}

} // namespace

std::string alert_subject(const ProcessId &id) {
  return std::to_string(id.pid) + "/" + std::to_string(id.start_ticks);
}

DetectorSet::DetectorSet(DetectorSettings settings) : settings_(settings), gate_(settings.gate) {}

void DetectorSet::scan(const CudaState &state,
                       const std::map<ProcessId, std::vector<MemoryChange>> &changes,
                       const std::map<ProcessId, double> &cpu_seconds, std::uint64_t now_ns,
                       const std::map<ProcessId, DeviceHeadroom> &headroom) {
  for (const auto &[id, process] : state.processes()) {
    auto [it, inserted] =
        detectors_.try_emplace(id, Detectors{LeakDetector(settings_.leak),
                                             OomClassifier(settings_.fragmentation),
                                             HangDetector(settings_.hang),
                                             {},
                                             {},
                                             false,
                                             {}});
    auto &detectors = it->second;
    // Device free memory needs NVML; without it the detectors work from the process alone.
    const auto room = headroom.find(id);
    const auto free_at = [&](std::uint64_t process_bytes) -> std::optional<std::uint64_t> {
      if (room == headroom.end())
        return std::nullopt;
      return room->second.free_at(process_bytes);
    };
    if (const auto found = changes.find(id); found != changes.end()) {
      detectors.leak.observe(found->second);
      // One at a time: each failure is judged by the free memory when it happened.
      for (const auto &change : found->second)
        detectors.oom.observe({&change, 1}, free_at(change.used_after));
    }

    auto &findings = findings_[id];
    findings.comm = process.comm;
    findings.container = process.container;
    findings.gpu_bytes_in_use = process.gpu_bytes_in_use();
    findings.leak = detectors.leak.evaluate(now_ns, findings.gpu_bytes_in_use,
                                            free_at(findings.gpu_bytes_in_use));
    if (const auto allocator = allocator_leaks_.find(id); allocator != allocator_leaks_.end()) {
      findings.leak.suspected = true;
      findings.leak.allocator_view = true;
      findings.leak.allocator_growth_bytes_per_second = allocator->second;
    }
    const auto cpu = cpu_seconds.find(id);
    findings.hang = detectors.hang.evaluate({now_ns, process.longest_call_seconds,
                                             static_cast<int>(process.longest_call_api),
                                             process.launches_total(), findings.gpu_bytes_in_use,
                                             cpu == cpu_seconds.end() ? 0.0 : cpu->second});
    findings.fragmentation_ratio = detectors.oom.fragmentation_ratio();
    findings.segments = detectors.oom.segment_count();
    findings.largest_segment = detectors.oom.largest_segment();
    findings.alloc_retries = detectors.oom.retries();
    findings.retry_storm = detectors.oom.retry_storm(now_ns);
    for (std::size_t cause = 0; cause < kOomCauses; ++cause)
      findings.ooms[cause] = detectors.oom.oom_count(static_cast<OomCause>(cause));

    for (const auto &oom : detectors.oom.take_oom_events()) {
      findings.last_oom = oom;
      const auto cause = std::string(oom_cause_name(oom.cause));
      std::vector<std::pair<std::string, std::string>> fields{
          {"REQUESTED_BYTES", std::to_string(oom.requested_bytes)},
          {"GPU_BYTES_IN_USE", std::to_string(oom.used_bytes)},
          {"OOM_CAUSE", cause},
          {"CUDA_ERROR", std::string(cu_result_name(oom.error))}};
      if (oom.device_free_bytes)
        fields.emplace_back("DEVICE_FREE_BYTES", std::to_string(*oom.device_free_bytes));
      if (gate_.event(AlertKind::oom, alert_subject(id), now_ns))
        notify(id, findings, AlertKind::oom, oom.time_ns,
               "allocation of " + human_bytes(static_cast<double>(oom.requested_bytes)) +
                   " failed (" + cause + ") while the process held " +
                   human_bytes(static_cast<double>(oom.used_bytes)),
               std::move(fields));
      if (oom.cause == OomCause::fragmentation)
        detectors.fragmentation_oom_ns = oom.time_ns;
    }

    const auto notices_before = notices_.size();
    condition(id, findings, detectors, AlertKind::memory_leak, findings.leak.suspected, now_ns,
              leak_notice);
    allocator_confirmation(id, findings, detectors, now_ns, notices_.size() > notices_before);
    // A fragmentation OOM is evidence for one storm window, like a retry storm.
    const auto storm_window_ns =
        static_cast<std::uint64_t>(settings_.fragmentation.storm_window_seconds * 1e9);
    const bool fragmented =
        findings.retry_storm || (detectors.fragmentation_oom_ns &&
                                 now_ns < *detectors.fragmentation_oom_ns + storm_window_ns);
    condition(id, findings, detectors, AlertKind::fragmentation, fragmented, now_ns,
              fragmentation_notice);
    condition(id, findings, detectors, AlertKind::hang, findings.hang.suspected, now_ns,
              hang_notice);
  }
}

void DetectorSet::allocator_confirmation(const ProcessId &id, const ProcessFindings &findings,
                                         Detectors &detectors, std::uint64_t now_ns,
                                         bool notified_now) {
  if (!findings.leak.allocator_view) {
    detectors.allocator_view_noticed = false;
    return;
  }
  if (detectors.allocator_view_noticed)
    return;
  detectors.allocator_view_noticed = true;
  // The leak condition's own notice of this scan already speaks for the allocator view. Else
  // (the driver view notified earlier, or its gate holds the condition in cooldown) one notice
  // names the lines whose tensors stay live, at most once per cooldown.
  const auto cooldown_ns = static_cast<std::uint64_t>(settings_.gate.cooldown_seconds * 1e9);
  if (!notified_now && (!detectors.allocator_notice_ns ||
                        now_ns - *detectors.allocator_notice_ns >= cooldown_ns)) {
    auto [summary, fields] = leak_notice(findings);
    notify(id, findings, AlertKind::memory_leak, now_ns, std::move(summary), std::move(fields));
  }
  detectors.allocator_notice_ns = now_ns;
}

void DetectorSet::condition(const ProcessId &id, const ProcessFindings &findings,
                            Detectors &detectors, AlertKind kind, bool active, std::uint64_t now_ns,
                            NoticeText (*describe)(const ProcessFindings &)) {
  if (active)
    detectors.active_since.try_emplace(kind, now_ns);
  else
    detectors.active_since.erase(kind);
  if (!gate_.condition(kind, alert_subject(id), active, now_ns))
    return;
  auto [summary, fields] = describe(findings); // only when a notification goes out
  notify(id, findings, kind, now_ns, std::move(summary), std::move(fields));
}

void DetectorSet::notify(const ProcessId &id, const ProcessFindings &findings, AlertKind kind,
                         std::uint64_t time_ns, std::string summary,
                         std::vector<std::pair<std::string, std::string>> fields) {
  std::vector<NoticeSite> sites;
  if (site_lookup_)
    sites = site_lookup_(id, kind, time_ns);
  if (!sites.empty()) {
    const auto &site = sites.front();
    summary += " at " + site.text;
    if (kind == AlertKind::memory_leak)
      summary += leak_sites_text(sites, fields);
    if (!site.function.empty())
      fields.emplace_back("TARGET_CODE_FUNC", site.function);
    if (site.line != 0) {
      fields.emplace_back("TARGET_CODE_FILE", site.module);
      fields.emplace_back("TARGET_CODE_LINE", std::to_string(site.line));
    } else if (!site.module.empty()) {
      fields.emplace_back("TARGET_CODE_MODULE", site.module);
    }
    fields.emplace_back("TARGET_CODE_LOCATION", site.location);
  }
  AlertNotice notice{kind,
                     id,
                     findings.comm,
                     findings.container,
                     time_ns,
                     std::move(summary),
                     std::move(fields),
                     std::move(sites)};
  recent_.push_back(notice);
  if (recent_.size() > kRecentNotices)
    recent_.pop_front();
  notices_.push_back(std::move(notice));
}

void DetectorSet::forget(const std::vector<ProcessId> &exited) {
  for (const auto &id : exited) {
    gate_.forget(alert_subject(id));
    detectors_.erase(id);
    findings_.erase(id);
  }
}

std::vector<std::uint64_t> DetectorSet::leak_sample_addresses(const ProcessId &id) const {
  const auto it = detectors_.find(id);
  return it == detectors_.end() ? std::vector<std::uint64_t>{}
                                : it->second.leak.unfreed_sample_addresses();
}

std::vector<ActiveAlert> DetectorSet::active() const {
  std::vector<ActiveAlert> alerts;
  for (const auto &[id, detectors] : detectors_)
    for (const auto &[kind, since] : detectors.active_since)
      alerts.push_back({kind, id, since});
  return alerts;
}

} // namespace neutracer
