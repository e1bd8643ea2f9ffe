// SPDX-License-Identifier: Apache-2.0
#include "detectors/least_squares.h"

#include <cstddef>

namespace neutracer {

double least_squares_slope(std::span<const std::uint64_t> levels, double spacing_seconds) {
  const auto n = static_cast<double>(levels.size());
  if (levels.size() < 2)
    return 0;
  // Offsets from the first level keep the sums small enough to stay exact in a double.
  const auto first = static_cast<double>(levels.front());
  double mean_x = 0, mean_y = 0;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    mean_x += static_cast<double>(i);
    mean_y += static_cast<double>(levels[i]) - first;
  }
  mean_x /= n;
  mean_y /= n;
  double covariance = 0, variance = 0;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const double dx = static_cast<double>(i) - mean_x;
    covariance += dx * (static_cast<double>(levels[i]) - first - mean_y);
    variance += dx * dx;
  }
  return covariance / variance / spacing_seconds;
}

} // namespace neutracer
