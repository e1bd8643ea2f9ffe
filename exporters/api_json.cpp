// SPDX-License-Identifier: Apache-2.0
#include "exporters/api_json.h"

#include <nlohmann/json.hpp>

#include "cuda/cuda_api_table.h"
#include "exporters/container_metrics.h"
#include "exporters/json_array_document.h"
#include "http/content_encoding.h"

namespace neutracer {
namespace {

using nlohmann::json;

// Replace invalid UTF-8 (names come from traced processes) instead of throwing.
std::string dump(const json &document) {
  return document.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

json process_ref(const ProcessId &id, const std::string &comm, const ContainerInfo &container) {
  json ref{{"pid", id.pid}, {"comm", comm}};
  // The same names as neutracer_container_info's labels.
  for (const auto &[key, value] : container_info_labels(container))
    ref[key] = value;
  return ref;
}

} // namespace

namespace {

// Passes the document on to `take` a piece at a time.
template <typename Take>
void write_processes_json(const CudaState &state, const DetectorSet &detectors, Take &&take) {
  std::map<ProcessId, std::vector<std::string>> active;
  for (const auto &alert : detectors.active())
    active[alert.id].emplace_back(alert_kind_name(alert.kind));
  JsonArrayDocument processes("processes", kJsonPieceBytes * 2);
  for (const auto &[id, process] : state.processes()) {
    auto entry = process_ref(id, process.comm, process.container);
    entry["exe"] = process.exe;
    auto memory = json::object();
    for (const auto kind :
         {MemoryKind::device, MemoryKind::managed, MemoryKind::host_pinned, MemoryKind::vmm}) {
      const auto &counters = process.memory[static_cast<std::size_t>(kind)];
      memory[std::string(memory_kind_name(kind))] = {{"used_bytes", counters.used_bytes},
                                                     {"peak_bytes", counters.peak_bytes},
                                                     {"allocations", counters.allocations},
                                                     {"frees", counters.frees}};
    }
    entry["memory"] = std::move(memory);
    entry["gpu_bytes_in_use"] = process.gpu_bytes_in_use();
    entry["kernel_launches"] = process.launches_total();
    entry["kernel_launches_estimated"] = process.launches_estimated;
    entry["failed_allocations"] = process.failed_allocations;
    if (const auto found = detectors.findings().find(id); found != detectors.findings().end()) {
      const auto &f = found->second;
      entry["detectors"] = {
          {"leak",
           {{"suspected", f.leak.suspected},
            {"trend", f.leak.trend},
            {"fast_trend", f.leak.fast_trend},
            {"probability", f.leak.probability},
            {"growth_bytes_per_second", f.leak.growth_bytes_per_second},
            {"sampled", f.leak.sampled},
            {"unfreed", f.leak.unfreed}}},
          {"fragmentation",
           {{"ratio", f.fragmentation_ratio},
            {"segments", f.segments},
            {"largest_segment_bytes", f.largest_segment},
            {"alloc_retries", f.alloc_retries},
            {"retry_storm", f.retry_storm}}},
          {"oom",
           {{"capacity", f.ooms[static_cast<std::size_t>(OomCause::capacity)]},
            {"fragmentation", f.ooms[static_cast<std::size_t>(OomCause::fragmentation)]}}},
          {"hang",
           {{"suspected", f.hang.suspected},
            {"reason", std::string(hang_reason_name(f.hang.reason))},
            {"stalled_seconds", f.hang.stalled_seconds}}}};
    }
    entry["active_alerts"] = active.contains(id) ? json(active.at(id)) : json::array();
    processes.add(entry);
    if (processes.size() >= kJsonPieceBytes)
      take(processes.take_text());
  }
  take(std::move(processes).finish());
}

} // namespace

std::string processes_json(const CudaState &state, const DetectorSet &detectors) {
  std::string text;
  write_processes_json(state, detectors, [&](const std::string &piece) { text += piece; });
  return text;
}

std::string processes_json_gzip(const CudaState &state, const DetectorSet &detectors) {
  GzipWriter gzip;
  write_processes_json(state, detectors, [&](const std::string &piece) { gzip.write(piece); });
  return std::move(gzip).finish();
}

std::string alerts_json(const DetectorSet &detectors, const ClockOffset &clock) {
  auto active = json::array();
  for (const auto &alert : detectors.active()) {
    const auto found = detectors.findings().find(alert.id);
    const std::string comm = found == detectors.findings().end() ? "" : found->second.comm;
    const ContainerInfo container =
        found == detectors.findings().end() ? ContainerInfo{} : found->second.container;
    auto entry = process_ref(alert.id, comm, container);
    entry["alert"] = std::string(alert_kind_name(alert.kind));
    entry["since"] = clock.to_unix(alert.since_ns);
    active.push_back(std::move(entry));
  }
  auto recent = json::array();
  for (const auto &notice : detectors.recent()) {
    auto entry = process_ref(notice.id, notice.comm, notice.container);
    entry["alert"] = std::string(alert_kind_name(notice.kind));
    entry["time"] = clock.to_unix(notice.time_ns);
    entry["summary"] = notice.summary;
    auto fields = json::object();
    for (const auto &[name, value] : notice.fields)
      fields[name] = value;
    entry["fields"] = std::move(fields);
    auto sites = json::array();
    for (const auto &site : notice.sites) {
      json named{{"text", site.text},
                 {"function", site.function},
                 {"module", site.module},
                 {"location", site.location}};
      if (site.line != 0)
        named["line"] = site.line;
      if (notice.kind == AlertKind::memory_leak)
        named["live_bytes"] = site.live_bytes;
      if (!site.view.empty())
        named["view"] = site.view; // which view ranked a leak's sites: allocator or driver
      sites.push_back(std::move(named));
    }
    entry["sites"] = std::move(sites);
    recent.push_back(std::move(entry));
  }
  return dump({{"active", std::move(active)}, {"recent", std::move(recent)}});
}

} // namespace neutracer
