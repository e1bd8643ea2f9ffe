// SPDX-License-Identifier: Apache-2.0
#pragma once
// The call-site recorder's own figures. Pure.
#include <cstdint>
#include <vector>

#include "exposition/exposition.h"

namespace neutracer {

// neutracer_call_sites (sites kept over all processes) and
// neutracer_python_stacks_rejected_total.
std::vector<MetricFamily> call_site_families(std::uint64_t sites, std::uint64_t python_rejected);

} // namespace neutracer
