// SPDX-License-Identifier: Apache-2.0
#pragma once
// The code an alert points at (detectors' NoticeSite) from a call site: its headline frame.
#include <optional>

#include "detectors/detector_set.h"
#include "stacks/call_sites.h"

namespace neutracer {

// nullopt for a site without a stack (no_stack, over_limit).
std::optional<NoticeSite> notice_site(const Site &site);

} // namespace neutracer
