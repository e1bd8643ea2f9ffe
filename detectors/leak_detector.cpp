// SPDX-License-Identifier: Apache-2.0
#include "detectors/leak_detector.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "detectors/least_squares.h"

namespace neutracer {
namespace {

// Bounds on what a process can make the detector keep.
constexpr std::size_t kMaxCandidates = 4096;
constexpr std::size_t kMaxSizesSeen = 4096;
constexpr std::size_t kMaxRecentAllocations = 65536;

std::uint64_t window_ns(double seconds) {
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::max(0.0, seconds) * 1e9));
}


} // namespace

LeakDetector::LeakDetector(LeakSettings settings)
    : settings_(settings),
      slow_(settings.window_seconds, static_cast<std::size_t>(std::max(2, settings.windows))) {
  if (settings.fast_windows > 0)
    fast_.emplace(settings.fast_window_seconds,
                  static_cast<std::size_t>(std::max(2, settings.fast_windows)));
}

void LeakDetector::observe(std::span<const MemoryChange> changes) {
  for (const auto &change : changes) {
    slow_.observe(change.time_ns, change.used_after);
    if (fast_) {
      fast_->observe(change.time_ns, change.used_after);
      track_sizes(change);
    }
    track_samples(change);
  }
}

void LeakDetector::track_sizes(const MemoryChange &change) {
  if (change.kind != MemoryChangeKind::allocation)
    return;
  const bool repeated = sizes_seen_.contains(change.bytes);
  if (!repeated) {
    // A process asking for thousands of distinct sizes starts over rather than grow this.
    if (sizes_seen_.size() >= kMaxSizesSeen)
      sizes_seen_.clear();
    sizes_seen_.insert(change.bytes);
  }
  recent_.push_back({change.time_ns, change.bytes, repeated});
  // Keep the fast windows being judged, plus the current one.
  const std::uint64_t span = window_ns(settings_.fast_window_seconds) *
                             static_cast<std::uint64_t>(fast_->windows() + 1);
  while (recent_begin_ < recent_.size() &&
         (recent_.size() - recent_begin_ > kMaxRecentAllocations ||
          recent_[recent_begin_].time_ns + span < change.time_ns))
    ++recent_begin_;
  if (recent_begin_ > 0 && recent_begin_ * 2 >= recent_.size()) {
    recent_.erase(recent_.begin(), recent_.begin() + static_cast<std::ptrdiff_t>(recent_begin_));
    recent_begin_ = 0;
  }
}

void LeakDetector::track_samples(const MemoryChange &change) {
  switch (change.kind) {
  case MemoryChangeKind::free:
    if (const auto candidate = candidate_of_address_.find(change.address);
        candidate != candidate_of_address_.end()) {
      candidates_.erase(candidate->second);
      candidate_of_address_.erase(candidate);
    }
    if (sample_of_address_.contains(change.address)) {
      forget_sample(change.address);
      ++freed_;
    }
    break;
  case MemoryChangeKind::allocation: {
    // The driver reuses an address only after a free; if that free was lost, the block went.
    if (sample_of_address_.contains(change.address)) {
      forget_sample(change.address);
      ++freed_;
    }
    if (const auto stale = candidate_of_address_.find(change.address);
        stale != candidate_of_address_.end()) {
      candidates_.erase(stale->second);
      candidate_of_address_.erase(stale);
    }
    if (candidates_.size() < kMaxCandidates) {
      candidates_[next_candidate_] = change.address;
      candidate_of_address_[change.address] = next_candidate_++;
    }
    if (change.used_after >= high_water_ &&
        change.used_after - high_water_ >= settings_.high_water_step_bytes) {
      high_water_ = change.used_after;
      // The oldest survivor since the last sample (at worst this very block).
      const std::uint64_t chosen =
          candidates_.empty() ? change.address : candidates_.begin()->second;
      sample(chosen);
      candidates_.clear();
      candidate_of_address_.clear();
    }
    break;
  }
  case MemoryChangeKind::failed_allocation:
    break;
  }
}

void LeakDetector::sample(std::uint64_t address) {
  if (sample_of_address_.contains(address))
    return;
  ++sampled_;
  const std::uint64_t sample = next_sample_++;
  sample_of_address_[address] = sample;
  address_of_sample_[sample] = address;
  // A forgotten sample stays counted as unfreed: it was kept at least this long.
  while (address_of_sample_.size() > std::max<std::size_t>(1, settings_.max_sampled_blocks))
    forget_sample(address_of_sample_.begin()->second);
}

void LeakDetector::forget_sample(std::uint64_t address) {
  const auto it = sample_of_address_.find(address);
  if (it == sample_of_address_.end())
    return;
  address_of_sample_.erase(it->second);
  sample_of_address_.erase(it);
}

std::vector<std::uint64_t> LeakDetector::unfreed_sample_addresses() const {
  std::vector<std::uint64_t> addresses;
  addresses.reserve(address_of_sample_.size());
  for (const auto &[sample, address] : address_of_sample_)
    addresses.push_back(address);
  return addresses;
}

bool LeakDetector::fast_trend(const std::vector<std::uint64_t> &minimums,
                              std::uint64_t now_ns) const {
  if (!rising_minimums(minimums, fast_->windows(), settings_.fast_min_growth_bytes))
    return false;
  // Steady: a burst straddling a window boundary makes one big rise among small ones. The
  // first rise may be small (a leak starting late in its window), never large.
  std::uint64_t largest = 0, smallest = minimums.back() - minimums[minimums.size() - 2];
  for (std::size_t i = 1; i < minimums.size(); ++i) {
    largest = std::max(largest, minimums[i] - minimums[i - 1]);
    if (i >= 2)
      smallest = std::min(smallest, minimums[i] - minimums[i - 1]);
  }
  if (static_cast<double>(largest) > settings_.fast_max_rise_ratio * static_cast<double>(smallest))
    return false;
  // Repeated: the bytes allocated over the judged windows, in sizes seen before.
  const std::uint64_t length = window_ns(settings_.fast_window_seconds);
  const std::uint64_t end = now_ns / length * length;
  const std::uint64_t begin = end - std::min<std::uint64_t>(end, length * minimums.size());
  double allocated = 0, repeated = 0;
  for (std::size_t i = recent_begin_; i < recent_.size(); ++i)
    if (const auto &allocation = recent_[i]; allocation.time_ns >= begin && allocation.time_ns < end) {
      allocated += static_cast<double>(allocation.bytes);
      if (allocation.repeated)
        repeated += static_cast<double>(allocation.bytes);
    }
  return allocated > 0 && repeated >= settings_.fast_min_repeated_share * allocated;
}

LeakVerdict LeakDetector::evaluate(std::uint64_t now_ns, std::uint64_t used_bytes,
                                   std::optional<std::uint64_t> device_free_bytes) const {
  LeakVerdict verdict;
  verdict.used_bytes = used_bytes;
  verdict.sampled = sampled_;
  verdict.unfreed = sampled_ - freed_;
  verdict.probability =
      static_cast<double>(verdict.unfreed + 1) / static_cast<double>(verdict.sampled + 2);

  const auto slow_minimums = slow_.last_complete(now_ns);
  verdict.trend = rising_minimums(slow_minimums, slow_.windows(), settings_.min_growth_bytes);
  verdict.growth_bytes_per_second =
      std::max(0.0, least_squares_slope(slow_minimums, slow_.window_seconds()));
  if (fast_) {
    const auto fast_minimums = fast_->last_complete(now_ns);
    verdict.fast_trend = fast_trend(fast_minimums, now_ns);
    if (verdict.fast_trend)
      verdict.growth_bytes_per_second =
          std::max(0.0, least_squares_slope(fast_minimums, fast_->window_seconds()));
  }
  if (device_free_bytes && verdict.growth_bytes_per_second > 0)
    verdict.seconds_until_full =
        static_cast<double>(*device_free_bytes) / verdict.growth_bytes_per_second;

  verdict.suspected = (verdict.trend || verdict.fast_trend) &&
                      verdict.sampled >= settings_.min_samples &&
                      verdict.probability >= settings_.probability_threshold;
  return verdict;
}

} // namespace neutracer
