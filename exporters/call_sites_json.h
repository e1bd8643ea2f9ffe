// SPDX-License-Identifier: Apache-2.0
#pragma once
// GET /api/v1/processes/<pid>/sites: a process's call sites with their frames and what each did.
// Pure.
#include <cstdint>
#include <string>

#include "common/process_id.h"
#include "stacks/site_recorder.h"

namespace neutracer {

// How stacks are taken, as the document reports it.
struct StackSettingsView {
  bool enabled = false;
  std::uint32_t max_depth = 0;
  std::uint32_t launch_sample_every = 0; // 0: no launch sites
};

std::string call_sites_json(const ProcessId &id, const std::string &comm,
                            const ProcessSitesView &sites, const StackSettingsView &settings);

// The site text of one frame's position: "module+0x1a2b", or "file:line" for Python.
std::string frame_location(const Frame &frame);

} // namespace neutracer
