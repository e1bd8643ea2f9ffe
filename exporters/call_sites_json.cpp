// SPDX-License-Identifier: Apache-2.0
#include "exporters/call_sites_json.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "common/text.h"

namespace neutracer {
namespace {

using nlohmann::json;

json frame_json(const Frame &frame) {
  json entry{{"kind", std::string(frame_kind_name(frame.kind))},
             {"function", frame.function ? json(*frame.function) : json(nullptr)}};
  if (frame.kind == FrameKind::python) {
    entry["file"] = frame.module ? json(*frame.module) : json(nullptr);
    entry["line"] = frame.line;
    return entry;
  }
  entry["module"] = frame.module ? json(*frame.module) : json(nullptr);
  entry["module_offset"] = hex_text(frame.module_offset);
  entry["function_offset"] = frame.function_offset;
  entry["address"] = hex_text(frame.address);
  return entry;
}

json counts_json(const SiteCounts &counts) {
  return {{"allocations", counts.allocations},
          {"allocated_bytes", counts.allocated_bytes},
          {"live_allocations", counts.live_allocations},
          {"live_bytes", counts.live_bytes},
          {"failed_allocations", counts.failed_allocations},
          {"failed_bytes", counts.failed_bytes},
          {"leak_samples", counts.leak_samples},
          {"launch_samples", counts.launch_samples},
          {"waits", counts.waits},
          {"wait_seconds", counts.wait_seconds},
          {"pending_waits", counts.pending_waits},
          {"longest_pending_wait_seconds", counts.longest_pending_seconds}};
}

// Most telling first: failures, then what is held, then where time goes.
auto order_key(const SiteCounts &c) {
  return std::tuple(c.failed_allocations, c.leak_samples, c.live_bytes, c.pending_waits,
                    c.launch_samples, c.wait_seconds, c.allocations);
}

// Which view ordered the sites: PyTorch's allocator (live tensors by site; its sites, when it has
// seen survivors, come first) or the driver.
json ranking_json(const AllocatorViewSummary *allocator) {
  if (!allocator)
    return {{"view", "driver"}};
  return {{"view", "allocator"},
          {"open", allocator->open},
          {"reason", std::string(investigation_reason_name(allocator->reason))},
          {"live_bytes", allocator->live_bytes}};
}

} // namespace

std::string frame_location(const Frame &frame) {
  if (frame.kind == FrameKind::python)
    return (frame.module ? *frame.module : std::string("?")) + ":" + std::to_string(frame.line);
  if (!frame.module)
    return hex_text(frame.address);
  const auto slash = frame.module->rfind('/');
  return (slash == std::string::npos ? *frame.module : frame.module->substr(slash + 1)) + "+" +
         hex_text(frame.module_offset);
}

std::string call_sites_json(const ProcessId &id, const std::string &comm,
                            const ProcessSitesView &view, const StackSettingsView &settings,
                            const AllocatorViewSummary *allocator) {
  // The allocator's ranking first (sites it names that the recorder no longer holds are
  // skipped), then the rest by the driver's counts.
  std::map<std::size_t, const SiteLiveBytes *> ranked;
  std::vector<std::size_t> order;
  if (allocator)
    for (const auto &entry : allocator->ranking)
      if (entry.site >= 0 && static_cast<std::size_t>(entry.site) < view.sites.size() &&
          ranked.emplace(static_cast<std::size_t>(entry.site), &entry).second)
        order.push_back(static_cast<std::size_t>(entry.site));
  std::vector<std::size_t> rest;
  for (std::size_t i = 0; i < view.sites.size(); ++i)
    if (!ranked.contains(i))
      rest.push_back(i);
  std::stable_sort(rest.begin(), rest.end(), [&](std::size_t a, std::size_t b) {
    return order_key(view.sites[a].counts) > order_key(view.sites[b].counts);
  });
  order.insert(order.end(), rest.begin(), rest.end());
  auto sites = json::array();
  for (const auto index : order) {
    const Site &site = view.sites[index];
    json entry{{"id", index}, {"kind", std::string(site_kind_name(site.kind))}};
    if (const auto found = ranked.find(index); found != ranked.end())
      entry["allocator"] = {{"survivor_bytes", found->second->survivor_bytes},
                            {"live_bytes", found->second->live_bytes},
                            {"live_blocks", found->second->live_blocks}};
    if (site.stack) {
      entry["end"] = std::string(stack_end_name(site.stack->end));
      entry["truncated"] = site.stack->end != StackEnd::complete;
      if (site.stack->python_lost)
        entry["python_frames_lost"] = true;
      auto frames = json::array();
      for (const auto &frame : site.stack->frames)
        frames.push_back(frame_json(frame));
      entry["frames"] = std::move(frames);
      if (const Frame *headline = headline_frame(*site.stack))
        entry["summary"] = frame_text(*headline);
    }
    if (!site.waiting_python.empty()) {
      // The waiting thread's Python frames: the script's line that synchronised comes first.
      auto frames = json::array();
      for (const auto &frame : site.waiting_python)
        frames.push_back(frame_json(frame));
      entry["waiting_python_frames"] = std::move(frames);
      entry["summary"] = frame_text(*program_python_frame(site.waiting_python));
    }
    entry["counts"] = counts_json(site.counts);
    sites.push_back(std::move(entry));
  }
  json document{{"pid", id.pid},
                {"comm", comm},
                {"stacks",
                 {{"enabled", settings.enabled},
                  {"max_depth", settings.max_depth},
                  {"launch_sample_every", settings.launch_sample_every}}},
                {"untracked_allocations", view.untracked_allocations},
                {"ranking", ranking_json(allocator)},
                {"sites", std::move(sites)}};
  // Names come from traced processes' files: replace invalid UTF-8 instead of throwing.
  return document.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace neutracer
