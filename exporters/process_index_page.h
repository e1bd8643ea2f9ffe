// SPDX-License-Identifier: Apache-2.0
#pragma once
// The pages that list the traced processes (/flame, /memory): one link a process to its own
// page, with a line on what that page holds. Pure: an HTML document.
#include <map>
#include <string>
#include <string_view>

#include "common/process_id.h"

namespace neutracer {

// A page titled `title` that links each process of `summaries` to `page_path`?pid=<pid>, named
// by its comm ("?" when `comms` lacks it) and followed by its summary ("12 sites").
std::string process_index_page(std::string_view title, std::string_view page_path,
                               const std::map<ProcessId, std::string> &summaries,
                               const std::map<ProcessId, std::string> &comms);

} // namespace neutracer
