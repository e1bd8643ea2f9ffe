// SPDX-License-Identifier: Apache-2.0
#pragma once
// The call site of a memory block or failed allocation, as the end of an SVG tooltip on the
// memory page. Pure.
#include <cstdint>
#include <string>

#include "stacks/site_recorder.h"

namespace neutracer {

// ", from leak_here (trainer+0x1234)" (HTML-escaped) for a site with a stack; ", stack not
// stored" for one recorded without; empty when `sites` is null or `site` unknown.
std::string site_tooltip(const ProcessSitesView *sites, std::int32_t site);

} // namespace neutracer
