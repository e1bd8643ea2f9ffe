// SPDX-License-Identifier: Apache-2.0
#include "detectors/window_minimums.h"

#include <algorithm>
#include <limits>

namespace neutracer {

WindowMinimums::WindowMinimums(double window_seconds, std::size_t windows)
    : window_ns_(std::max<std::uint64_t>(
          1, static_cast<std::uint64_t>(std::max(0.0, window_seconds) * 1e9))),
      windows_(std::max<std::size_t>(1, windows)) {}

void WindowMinimums::observe(std::uint64_t time_ns, std::uint64_t level) {
  advance_to(time_ns / window_ns_);
  level_ = level;
  current_->min_level = std::min(current_->min_level, level_);
}

void WindowMinimums::advance_to(std::uint64_t index) {
  if (!current_) {
    // The level before the first change is unknown: the window's minimum starts with it.
    current_ = Window{index, std::numeric_limits<std::uint64_t>::max()};
    return;
  }
  if (index <= current_->index)
    return;
  std::vector<Window> closing;
  append_closed(closing, *current_, index);
  closed_.insert(closed_.end(), closing.begin(), closing.end());
  if (closed_.size() > windows_)
    closed_.erase(closed_.begin(),
                  closed_.begin() + static_cast<std::ptrdiff_t>(closed_.size() - windows_));
  // The level carried into the window is part of its minimum.
  current_ = Window{index, level_};
}

// `closing` and the quiet windows after it up to `next_index`, which carry the last level. Only
// the last windows_ matter, so a long quiet gap adds at most that many.
void WindowMinimums::append_closed(std::vector<Window> &into, const Window &closing,
                                   std::uint64_t next_index) const {
  into.push_back(closing);
  const std::uint64_t gap = next_index - closing.index - 1;
  for (std::uint64_t i = next_index - std::min<std::uint64_t>(gap, windows_); i < next_index; ++i)
    into.push_back(Window{i, level_});
}

std::vector<std::uint64_t> WindowMinimums::last_complete(std::uint64_t now_ns) const {
  std::vector<Window> windows(closed_.begin(), closed_.end());
  const std::uint64_t now_index = now_ns / window_ns_;
  if (current_ && current_->index < now_index)
    append_closed(windows, *current_, now_index);
  const std::size_t skip = windows.size() > windows_ ? windows.size() - windows_ : 0;
  std::vector<std::uint64_t> minimums;
  for (std::size_t i = skip; i < windows.size(); ++i)
    minimums.push_back(windows[i].min_level);
  return minimums;
}

bool rising_minimums(const std::vector<std::uint64_t> &minimums, std::size_t count,
                     std::uint64_t floor) {
  if (minimums.size() != count || count < 2)
    return false;
  for (std::size_t i = 1; i < minimums.size(); ++i)
    if (minimums[i] <= minimums[i - 1])
      return false;
  return minimums.back() - minimums.front() >= floor;
}

} // namespace neutracer
