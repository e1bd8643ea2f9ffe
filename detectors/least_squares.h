// SPDX-License-Identifier: Apache-2.0
#pragma once
// The least-squares slope of levels taken at a fixed spacing (window minimums), shared by the
// detectors that report a growth rate. Pure.
#include <cstdint>
#include <span>

namespace neutracer {

// Slope of `levels` (one every `spacing_seconds`, oldest first) in units per second; 0 with
// fewer than two levels. May be negative.
double least_squares_slope(std::span<const std::uint64_t> levels, double spacing_seconds);

} // namespace neutracer
