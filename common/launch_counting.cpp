// SPDX-License-Identifier: Apache-2.0
#include "common/launch_counting.h"

namespace neutracer {

std::string_view launch_counting_name(LaunchCounting mode) {
  switch (mode) {
  case LaunchCounting::exact:
    return "exact";
  case LaunchCounting::adaptive:
    return "adaptive";
  case LaunchCounting::off:
    return "off";
  }
  return "?";
}

std::optional<LaunchCounting> parse_launch_counting(std::string_view text) {
  for (const auto mode : kLaunchCountingModes)
    if (text == launch_counting_name(mode))
      return mode;
  return std::nullopt;
}

} // namespace neutracer
