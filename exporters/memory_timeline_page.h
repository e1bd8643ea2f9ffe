#pragma once
// The memory layout timeline (`/memory?pid=N`): each GPU allocation of a process as a bar
// from its allocation to its free, stacked by address, with failed allocations marked. Pure:
// the page is an HTML document with an inline SVG, no scripts.
#include <cstdint>
#include <map>
#include <string>

#include "cuda/memory_timeline.h"
#include "stacks/site_recorder.h"

namespace neutracer {

// `sites`, when given, names each block's and failure's call site in its tooltip.
std::string memory_timeline_svg(const ProcessTimeline &timeline, std::uint64_t now_ns,
                                const ProcessSitesView *sites = nullptr);
std::string memory_timeline_page(const ProcessId &id, const std::string &comm,
                                 const ProcessTimeline &timeline, std::uint64_t now_ns,
                                 const ProcessSitesView *sites = nullptr);
// The list of processes with a timeline, linking to each page.
std::string memory_timeline_index(const std::map<ProcessId, ProcessTimeline> &timelines,
                                  const std::map<ProcessId, std::string> &comms);

} // namespace neutracer
