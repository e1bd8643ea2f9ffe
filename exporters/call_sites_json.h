// SPDX-License-Identifier: Apache-2.0
#pragma once
// GET /api/v1/processes/<pid>/sites: a process's call sites with their frames and what each did.
// Where PyTorch's allocator view has looked at the process, the sites whose tensors it saw
// stay live come first, in its order (`"ranking": {"view": "allocator"}`); otherwise the driver's
// counts order them (`"view": "driver"`). Pure.
#include <cstdint>
#include <string>

#include "allocator/allocator_view.h"
#include "common/process_id.h"
#include "stacks/site_recorder.h"

namespace neutracer {

// How stacks are taken, as the document reports it.
struct StackSettingsView {
  bool enabled = false;
  std::uint32_t max_depth = 0;
  std::uint32_t launch_sample_every = 0; // 0: no launch sites
};

// `allocator`: the process's allocator view (open or last), null when it had none.
std::string call_sites_json(const ProcessId &id, const std::string &comm,
                            const ProcessSitesView &sites, const StackSettingsView &settings,
                            const AllocatorViewSummary *allocator = nullptr);

// The site text of one frame's position: "module+0x1a2b", or "file:line" for Python.
std::string frame_location(const Frame &frame);

} // namespace neutracer
