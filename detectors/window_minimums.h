// SPDX-License-Identifier: Apache-2.0
#pragma once
// The minimum of a level (GPU memory in use) in each fixed window of time, for the last
// `windows` windows: the leak detector's trend test at one time scale. Pure: the caller passes
// the times.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace neutracer {

class WindowMinimums {
public:
  // `window_seconds` > 0 (smaller values are treated as 1 ns); `windows` >= 1.
  WindowMinimums(double window_seconds, std::size_t windows);

  // The level became `level` at `time_ns`. Times must not go back; an earlier time counts in
  // the current window (late delivery).
  void observe(std::uint64_t time_ns, std::uint64_t level);

  // Minimums of the last complete windows before `now_ns`, oldest first (at most `windows`).
  // Windows without changes carry the last level. Const: evaluating never closes a window that
  // late changes still belong to.
  std::vector<std::uint64_t> last_complete(std::uint64_t now_ns) const;

  double window_seconds() const { return static_cast<double>(window_ns_) / 1e9; }
  std::size_t windows() const { return windows_; }

private:
  struct Window {
    std::uint64_t index = 0; // time_ns / window length
    std::uint64_t min_level = 0;
  };
  void advance_to(std::uint64_t index);
  void append_closed(std::vector<Window> &into, const Window &closing,
                     std::uint64_t next_index) const;

  std::uint64_t window_ns_;
  std::size_t windows_;
  // A vector: an empty std::deque holds ~600 bytes, and there are two of these per process.
  std::vector<Window> closed_; // oldest first, contiguous indices, at most windows_
  std::optional<Window> current_;
  std::uint64_t level_ = 0; // the latest level
};

// True when `minimums` holds `count` (>= 2) values, each above the one before, rising by at least
// `floor` from first to last: the shared trend test of the leak detector and the allocator view.
bool rising_minimums(const std::vector<std::uint64_t> &minimums, std::size_t count,
                     std::uint64_t floor);

} // namespace neutracer
