// SPDX-License-Identifier: Apache-2.0
#include "allocator/live_bytes_trend.h"

#include <algorithm>
#include <cstddef>

#include "detectors/least_squares.h"

namespace neutracer {
namespace {


// Steady, as the leak detector's fast trend: a burst straddling a window boundary makes one big
// rise among small ones. Each rise is held against the rises after it only, so the first rises
// may be small (a leak starting late in its window) but never large.
bool steady(const std::vector<std::uint64_t> &minimums, double max_rise_ratio) {
  if (minimums.size() < 3)
    return true;
  std::uint64_t smallest_later = minimums.back() - minimums[minimums.size() - 2];
  for (std::size_t i = minimums.size() - 2; i >= 1; --i) {
    const std::uint64_t rise = minimums[i] - minimums[i - 1];
    if (static_cast<double>(rise) > max_rise_ratio * static_cast<double>(smallest_later))
      return false;
    smallest_later = std::min(smallest_later, rise);
  }
  return true;
}

} // namespace

LiveBytesTrend::LiveBytesTrend(LiveBytesTrendSettings settings)
    : settings_(settings),
      minimums_(settings.window_seconds, static_cast<std::size_t>(std::max(2, settings.windows))) {}

void LiveBytesTrend::observe(std::uint64_t time_ns, std::uint64_t bytes) {
  minimums_.observe(time_ns, bytes);
}

LiveBytesVerdict LiveBytesTrend::evaluate(std::uint64_t now_ns) const {
  LiveBytesVerdict verdict;
  verdict.minimums = minimums_.last_complete(now_ns);
  verdict.rising =
      rising_minimums(verdict.minimums, minimums_.windows(), settings_.min_growth_bytes) &&
      steady(verdict.minimums, settings_.max_rise_ratio);
  verdict.growth_bytes_per_second =
      std::max(0.0, least_squares_slope(verdict.minimums, minimums_.window_seconds()));
  return verdict;
}

} // namespace neutracer
