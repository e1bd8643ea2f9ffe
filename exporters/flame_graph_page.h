// SPDX-License-Identifier: Apache-2.0
#pragma once
// The flame graph of a process's call sites (`/flame?pid=N&by=...`): stacks merged from the
// outermost frame up, each frame as wide as what its stacks did (live bytes, failed
// allocations, launch samples, wait time). Pure: an HTML document with an inline SVG and a few
// lines of script to zoom into a frame; nothing is fetched, so it works offline.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/process_id.h"
#include "stacks/site_recorder.h"

namespace neutracer {

enum class FlameWeight {
  live_bytes,
  allocated_bytes,
  failed_allocations,
  launch_samples,
  wait_seconds
};
std::string_view flame_weight_name(FlameWeight weight);
std::optional<FlameWeight> parse_flame_weight(std::string_view name);
// The first of live bytes, failed allocations, launch samples, wait time and allocated bytes
// that the process has any of.
FlameWeight default_flame_weight(const ProcessSitesView &sites);

std::string flame_graph_svg(const ProcessSitesView &sites, FlameWeight weight);
std::string flame_graph_page(const ProcessId &id, const std::string &comm,
                             const ProcessSitesView &sites, FlameWeight weight);
// The processes with call sites, linking to each one's flame graph.
std::string
flame_graph_index(const std::map<ProcessId, std::shared_ptr<const ProcessSitesView>> &sites,
                  const std::map<ProcessId, std::string> &comms);

} // namespace neutracer
