#include "detectors/leak_detector.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace neutracer {
namespace {

std::uint64_t seconds_to_ns(double seconds) {
  // Guard the division by the window length against zero or negative settings.
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::max(0.0, seconds) * 1e9));
}

// Least-squares slope in bytes per second; x is the window start.
double slope(const std::vector<std::uint64_t> &minimums, double window_seconds) {
  const auto n = static_cast<double>(minimums.size());
  if (minimums.size() < 2)
    return 0;
  // Offsets from the first minimum keep the sums small enough to stay exact in a double.
  const auto first = static_cast<double>(minimums.front());
  double mean_x = 0, mean_y = 0;
  for (std::size_t i = 0; i < minimums.size(); ++i) {
    mean_x += static_cast<double>(i);
    mean_y += static_cast<double>(minimums[i]) - first;
  }
  mean_x /= n;
  mean_y /= n;
  double covariance = 0, variance = 0;
  for (std::size_t i = 0; i < minimums.size(); ++i) {
    const double dx = static_cast<double>(i) - mean_x;
    covariance += dx * (static_cast<double>(minimums[i]) - first - mean_y);
    variance += dx * dx;
  }
  return covariance / variance / window_seconds;
}

} // namespace

LeakDetector::LeakDetector(LeakSettings settings)
    : settings_(settings), window_ns_(seconds_to_ns(settings.window_seconds)),
      windows_(static_cast<std::size_t>(std::max(2, settings.windows))) {}

void LeakDetector::observe(std::span<const MemoryChange> changes) {
  for (const auto &change : changes) {
    advance_to(change.time_ns / window_ns_);
    level_ = change.used_after;
    current_->min_used = std::min(current_->min_used, level_);
    track_samples(change);
  }
}

void LeakDetector::advance_to(std::uint64_t index) {
  if (!current_) {
    // The level before the first change is unknown: the window's minimum starts with it.
    current_ = Window{index, std::numeric_limits<std::uint64_t>::max()};
    return;
  }
  if (index <= current_->index)
    return;
  closed_.push_back(*current_);
  // Only the last windows_ matter, so a long quiet gap adds at most that many carried windows.
  const std::uint64_t gap = index - current_->index - 1;
  for (std::uint64_t i = index - std::min<std::uint64_t>(gap, windows_); i < index; ++i)
    closed_.push_back(Window{i, level_});
  if (closed_.size() > windows_)
    closed_.erase(closed_.begin(),
                  closed_.begin() + static_cast<std::ptrdiff_t>(closed_.size() - windows_));
  // The level carried into the window is part of its minimum.
  current_ = Window{index, level_};
}

void LeakDetector::track_samples(const MemoryChange &change) {
  switch (change.kind) {
  case MemoryChangeKind::free:
    if (sample_of_address_.contains(change.address)) {
      forget_sample(change.address);
      ++freed_;
    }
    break;
  case MemoryChangeKind::allocation:
    // The driver reuses an address only after a free; if that free was lost, the sample went.
    if (sample_of_address_.contains(change.address)) {
      forget_sample(change.address);
      ++freed_;
    }
    if (change.used_after >= high_water_ &&
        change.used_after - high_water_ >= settings_.high_water_step_bytes) {
      high_water_ = change.used_after;
      ++sampled_;
      const std::uint64_t sample = next_sample_++;
      sample_of_address_[change.address] = sample;
      address_of_sample_[sample] = change.address;
      // A forgotten sample stays counted as unfreed: it was kept at least this long.
      while (address_of_sample_.size() > std::max<std::size_t>(1, settings_.max_sampled_blocks))
        forget_sample(address_of_sample_.begin()->second);
    }
    break;
  case MemoryChangeKind::failed_allocation:
    break;
  }
}

void LeakDetector::forget_sample(std::uint64_t address) {
  const auto it = sample_of_address_.find(address);
  if (it == sample_of_address_.end())
    return;
  address_of_sample_.erase(it->second);
  sample_of_address_.erase(it);
}

std::vector<LeakDetector::Window> LeakDetector::last_complete_windows(std::uint64_t now_ns) const {
  std::vector<Window> result(closed_.begin(), closed_.end());
  const std::uint64_t now_index = now_ns / window_ns_;
  if (current_ && current_->index < now_index) {
    result.push_back(*current_);
    const std::uint64_t gap = now_index - current_->index - 1;
    for (std::uint64_t i = now_index - std::min<std::uint64_t>(gap, windows_); i < now_index; ++i)
      result.push_back(Window{i, level_});
  }
  if (result.size() > windows_)
    result.erase(result.begin(), result.end() - static_cast<std::ptrdiff_t>(windows_));
  return result;
}

LeakVerdict LeakDetector::evaluate(std::uint64_t now_ns, std::uint64_t used_bytes,
                                   std::optional<std::uint64_t> device_free_bytes) const {
  LeakVerdict verdict;
  verdict.used_bytes = used_bytes;
  verdict.sampled = sampled_;
  verdict.unfreed = sampled_ - freed_;
  verdict.probability =
      static_cast<double>(verdict.unfreed + 1) / static_cast<double>(verdict.sampled + 2);

  const auto windows = last_complete_windows(now_ns);
  std::vector<std::uint64_t> minimums;
  for (const auto &window : windows)
    minimums.push_back(window.min_used);

  // Strictly rising in every window: one flat window (a plateau) breaks the trend.
  bool rising = minimums.size() == windows_;
  for (std::size_t i = 1; rising && i < minimums.size(); ++i)
    rising = minimums[i] > minimums[i - 1];
  verdict.trend = rising && minimums.back() - minimums.front() >= settings_.min_growth_bytes;

  verdict.growth_bytes_per_second =
      std::max(0.0, slope(minimums, static_cast<double>(window_ns_) / 1e9));
  if (device_free_bytes && verdict.growth_bytes_per_second > 0)
    verdict.seconds_until_full =
        static_cast<double>(*device_free_bytes) / verdict.growth_bytes_per_second;

  verdict.suspected = verdict.trend && verdict.sampled >= settings_.min_samples &&
                      verdict.probability >= settings_.probability_threshold;
  return verdict;
}

} // namespace neutracer
