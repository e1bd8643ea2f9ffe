// SPDX-License-Identifier: Apache-2.0
#pragma once
// The allocator view's leak verdict: the live tensor bytes a process gained since the view
// opened (BlockLedger::live_bytes) keep rising. Window minimums of live tensor bytes do not
// saw-tooth with the pool's segments, so this holds where the driver view cannot call growth
// steady (segments of varying sizes, a pool growing in bursts). Pure: times are passed in.
#include <cstdint>
#include <vector>

#include "detectors/window_minimums.h"

namespace neutracer {

struct LiveBytesTrendSettings {
  double window_seconds = 2;
  int windows = 5; // at least 2: four rises in ten seconds
  // 32 MiB over the rises (about 4 MiB/s); a leak of tens of MiB/s passes in one window.
  std::uint64_t min_growth_bytes = 32ull << 20;
  // No rise more than this many times any later one: a warm-up's one burst is not a trend.
  double max_rise_ratio = 4;
};

struct LiveBytesVerdict {
  bool rising = false;
  double growth_bytes_per_second = 0;  // least-squares slope of the minimums, never negative
  std::vector<std::uint64_t> minimums; // of the last complete windows, oldest first
};

class LiveBytesTrend {
public:
  explicit LiveBytesTrend(LiveBytesTrendSettings settings = {});
  // Live bytes became `bytes` at `time_ns` (times never go back).
  void observe(std::uint64_t time_ns, std::uint64_t bytes);
  LiveBytesVerdict evaluate(std::uint64_t now_ns) const;

private:
  LiveBytesTrendSettings settings_;
  WindowMinimums minimums_;
};

} // namespace neutracer
