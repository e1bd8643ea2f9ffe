// SPDX-License-Identifier: Apache-2.0
#pragma once
// Text placed in the daemon's HTML pages (process and host names come from outside).
#include <string>
#include <string_view>

namespace neutracer {

// & < > " as entities; everything else as is.
std::string html_escape(std::string_view text);

} // namespace neutracer
