// SPDX-License-Identifier: Apache-2.0
#include "common/launch_counting.h"

#include "common/enum_names.h"

namespace neutracer {

constexpr std::array<std::string_view, 3> kLaunchCountingNames = {"exact", "adaptive", "off"};
static_assert(kLaunchCountingNames.size() == enum_count(LaunchCounting::off));

std::string_view launch_counting_name(LaunchCounting mode) {
  return enum_name(mode, kLaunchCountingNames);
}

std::optional<LaunchCounting> parse_launch_counting(std::string_view text) {
  for (const auto mode : kLaunchCountingModes)
    if (text == launch_counting_name(mode))
      return mode;
  return std::nullopt;
}

} // namespace neutracer
