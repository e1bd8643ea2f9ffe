// SPDX-License-Identifier: Apache-2.0
#pragma once
// How kernel launches are counted (cuda.launch_counting and its per-process rules). Here, below
// config/ and cuda/, so that the key is parsed once into this enum and its names are listed once.
#include <array>
#include <optional>
#include <string_view>

namespace neutracer {

enum class LaunchCounting {
  exact,    // launch probes always attached: every launch counted
  adaptive, // exact below a launch rate, duty-cycled windows above it
  off,      // no launch probes
};

inline constexpr std::array kLaunchCountingModes = {LaunchCounting::exact, LaunchCounting::adaptive,
                                                    LaunchCounting::off};

std::string_view launch_counting_name(LaunchCounting mode);
std::optional<LaunchCounting> parse_launch_counting(std::string_view text);

} // namespace neutracer
