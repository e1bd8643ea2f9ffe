// SPDX-License-Identifier: Apache-2.0
#include "exporters/call_sites_json.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace neutracer {
namespace {

using nlohmann::json;

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

json frame_json(const Frame &frame) {
  json entry{{"kind", std::string(frame_kind_name(frame.kind))},
             {"function", frame.function ? json(*frame.function) : json(nullptr)}};
  if (frame.kind == FrameKind::python) {
    entry["file"] = frame.module ? json(*frame.module) : json(nullptr);
    entry["line"] = frame.line;
    return entry;
  }
  entry["module"] = frame.module ? json(*frame.module) : json(nullptr);
  entry["module_offset"] = hex(frame.module_offset);
  entry["function_offset"] = frame.function_offset;
  entry["address"] = hex(frame.address);
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

} // namespace

std::string frame_location(const Frame &frame) {
  if (frame.kind == FrameKind::python)
    return (frame.module ? *frame.module : std::string("?")) + ":" + std::to_string(frame.line);
  if (!frame.module)
    return hex(frame.address);
  const auto slash = frame.module->rfind('/');
  return (slash == std::string::npos ? *frame.module : frame.module->substr(slash + 1)) + "+" +
         hex(frame.module_offset);
}

std::string call_sites_json(const ProcessId &id, const std::string &comm,
                            const ProcessSitesView &view, const StackSettingsView &settings) {
  std::vector<std::size_t> order(view.sites.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return order_key(view.sites[a].counts) > order_key(view.sites[b].counts);
  });
  auto sites = json::array();
  for (const auto index : order) {
    const Site &site = view.sites[index];
    json entry{{"id", index}, {"kind", std::string(site_kind_name(site.kind))}};
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
                {"sites", std::move(sites)}};
  // Names come from traced processes' files: replace invalid UTF-8 instead of throwing.
  return document.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace neutracer
