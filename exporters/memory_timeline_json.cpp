// SPDX-License-Identifier: Apache-2.0
#include "exporters/memory_timeline_json.h"

#include <nlohmann/json.hpp>

#include "exporters/segment_layout.h"

namespace neutracer {

std::string memory_timeline_json(const ProcessId &id, const std::string &comm,
                                 const ProcessTimeline &timeline, const ClockOffset &clock,
                                 const AllocatorViewSummary *allocator) {
  auto blocks = nlohmann::json::array();
  for (const auto &block : timeline.blocks)
    blocks.push_back({{"address", block.address},
                      {"bytes", block.bytes},
                      {"allocated_ns", block.allocated_ns},
                      {"freed_ns", block.freed_ns}});
  auto failures = nlohmann::json::array();
  for (const auto &failure : timeline.failures)
    failures.push_back({{"time_ns", failure.time_ns}, {"bytes", failure.bytes}});
  nlohmann::json document{{"pid", id.pid},
                          {"comm", comm},
                          {"now_ns", clock.monotonic_now_ns},
                          {"now_unix_seconds", clock.unix_now_seconds},
                          {"dropped_blocks", timeline.dropped_blocks},
                          {"blocks", std::move(blocks)},
                          {"failures", std::move(failures)}};
  if (allocator && allocator->open)
    document["allocator_view"] = segment_layout_json(timeline, *allocator);
  // Comm names are bytes from the kernel: replace invalid UTF-8 instead of throwing.
  return document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace neutracer
