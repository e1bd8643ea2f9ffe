// SPDX-License-Identifier: Apache-2.0
#pragma once
// Per-process GPU memory leak detector over the process's stream of memory changes.
// Pure: the caller passes times and readings; nothing here reads clocks or devices.
//
// A leak is suspected when a trend test and the evidence test agree.
//
// Trend, at two time scales (tests/fixtures/leak_streams holds the GPU recordings behind them):
//  - slow: the minimum of memory in use per window rose in each of the last `windows` complete
//    windows (1 min x 5), by at least `min_growth_bytes` (256 MiB) in all. Minimums ignore the
//    transient peaks of training steps and request bursts; a plateau (caching allocator warmed
//    up) stops the rise within one window.
//  - fast: the same over short windows (2 s x 5, at least 128 MiB: 16 MiB/s), and the
//    growth is steady and repeated: no window rose more than `fast_max_rise_ratio` times any
//    later one (a warm-up's one burst straddling windows is not a trend; the first rise may be
//    small, as when a leak starts late in its window), and at least
//    `fast_min_repeated_share` of the bytes allocated over those windows came in sizes already
//    allocated before (a leak keeps the same tensor again and again; a workload growing its
//    shapes asks for ever new sizes). A fast leak pages in about 10 s.
// Evidence: Laplace's rule of succession over high-water-mark samples. Each time use passes the
// last mark by `high_water_step_bytes`, the oldest block allocated since the last sample and
// still live is sampled; P(next sample is never freed) = (unfreed + 1) / (sampled + 2). Growth
// made of blocks that are later returned (a load rising, then falling) keeps this low; the
// oldest survivor, not the block that crossed the mark, is sampled so that a loop freeing its
// transients after each peak is judged by what it keeps.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cuda/memory_change.h"
#include "detectors/window_minimums.h"

namespace neutracer {

struct LeakSettings {
  // Slow trend: a minute spans many training steps or requests, so a window's minimum is the
  // memory the process keeps between them; five of them (four rises) take about five minutes.
  double window_seconds = 60;
  int windows = 5; // at least 2
  // About 1 MiB/s sustained over the four rises; smaller drifts (allocator rounding, lazily
  // created cuBLAS workspaces) stay below it.
  std::uint64_t min_growth_bytes = 256ull << 20;
  // Fast trend; fast_windows 0 turns it off. Five 2 s windows see four rises; 128 MiB over
  // them separates the recorded leaks (19 MiB/s) from steady healthy growth (a batch-size ramp
  // under expandable segments, 11 MiB/s on average) at every alignment of windows and scans
  // (BENCHMARKS.md, "Fast leak settings"). Four 3 s windows flagged that ramp at most of them.
  double fast_window_seconds = 2;
  int fast_windows = 5; // 0, or at least 2
  std::uint64_t fast_min_growth_bytes = 128ull << 20;
  double fast_max_rise_ratio = 3;
  double fast_min_repeated_share = 0.5;
  // Small against a fast leak's growth so that it gathers min_samples in seconds, large against
  // the 2 MiB allocation granularity so that one sample stands for real growth.
  std::uint64_t high_water_step_bytes = 16ull << 20;
  std::uint32_t min_samples = 4;
  double probability_threshold = 0.75;
  // Oldest samples beyond this are forgotten and stay counted as unfreed.
  std::size_t max_sampled_blocks = 4096;
};

struct LeakVerdict {
  bool suspected = false;
  bool trend = false;      // the slow trend holds
  bool fast_trend = false; // the fast trend (rise, floor, steadiness, repetition) holds
  double probability = 0;  // evidence: (unfreed + 1) / (sampled + 2)
  // Least-squares slope of the window minimums, never negative: over the fast windows when the
  // fast trend holds, else over the slow ones. Reported with or without a trend (a gauge).
  double growth_bytes_per_second = 0;
  // device_free_bytes / growth, when both are known and growth > 0.
  std::optional<double> seconds_until_full;
  std::uint64_t used_bytes = 0;
  std::uint64_t sampled = 0;
  std::uint64_t unfreed = 0;
  // Set by DetectorSet from PyTorch's allocator view (docs/allocator-view.md): live tensor bytes
  // kept rising there, which makes the leak suspected even where the driver view cannot call
  // the pool's growth steady.
  bool allocator_view = false;
  double allocator_growth_bytes_per_second = 0;
};

class LeakDetector {
public:
  explicit LeakDetector(LeakSettings settings = {});

  // Changes of one process, in time order, each batch after the previous one. A change dated
  // before the current window (late delivery) counts in the current window.
  void observe(std::span<const MemoryChange> changes);

  // Const so that evaluating at `now_ns` never closes windows that late changes still belong
  // to; windows without changes up to `now_ns` carry the last level.
  LeakVerdict evaluate(std::uint64_t now_ns, std::uint64_t used_bytes,
                       std::optional<std::uint64_t> device_free_bytes) const;

  // Addresses of the sampled blocks not freed yet (at most max_sampled_blocks), oldest first.
  std::vector<std::uint64_t> unfreed_sample_addresses() const;

private:
  struct RecentAllocation {
    std::uint64_t time_ns = 0;
    std::uint64_t bytes = 0;
    bool repeated = false; // its size had been allocated before
  };

  void track_samples(const MemoryChange &change);
  void track_sizes(const MemoryChange &change);
  void sample(std::uint64_t address);
  void forget_sample(std::uint64_t address);
  bool fast_trend(const std::vector<std::uint64_t> &minimums, std::uint64_t now_ns) const;

  LeakSettings settings_;
  WindowMinimums slow_;
  std::optional<WindowMinimums> fast_;

  // Evidence.
  std::uint64_t high_water_ = 0;
  std::uint64_t sampled_ = 0;
  std::uint64_t freed_ = 0;
  std::uint64_t next_sample_ = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> sample_of_address_;
  std::map<std::uint64_t, std::uint64_t> address_of_sample_; // oldest sample first
  // Blocks allocated since the last sample and still live: candidates for the next one.
  std::uint64_t next_candidate_ = 0;
  std::map<std::uint64_t, std::uint64_t> candidates_; // allocation order -> address
  std::unordered_map<std::uint64_t, std::uint64_t> candidate_of_address_;

  // Repetition, over the fast windows.
  std::unordered_set<std::uint64_t> sizes_seen_;
  // Oldest first from recent_begin_; a vector (an empty std::deque holds ~600 bytes), its
  // consumed front dropped once it is half of it.
  std::vector<RecentAllocation> recent_;
  std::size_t recent_begin_ = 0;
};

} // namespace neutracer
