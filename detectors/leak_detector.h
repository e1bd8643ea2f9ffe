#pragma once
// Per-process GPU memory leak detector over the process's stream of memory changes.
// Pure: the caller passes times and readings; nothing here reads clocks or devices.
//
// Two tests must agree before a leak is suspected:
//  (a) trend: the minimum of memory in use per window rose in each of the last `windows`
//      complete windows, by at least `min_growth_bytes` in all. Minimums ignore the transient
//      peaks of training steps and request bursts; a plateau (caching allocator warmed up) stops
//      the rise within one window.
//  (b) Laplace's rule of succession over high-water-mark samples: the allocation that pushes use
//      a step past the last mark is sampled; P(next sampled block is never freed) =
//      (unfreed + 1) / (sampled + 2). Growth made of blocks that are later returned (a load rising,
//      then falling) keeps this low.
// Limitation: a sample is the block that crossed the mark. When a loop keeps its leaked block
// only after its transient peak has passed, transients cross the marks and (b) stays low.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "cuda/memory_change.h"

namespace neutracer {

struct LeakSettings {
  // A minute spans many training steps or requests, so a window's minimum is the memory the
  // process keeps between them; five of them (four rises) put detection at about five minutes.
  double window_seconds = 60;
  int windows = 5; // at least 2
  // About 1 MiB/s sustained over the four rises; smaller drifts (allocator rounding, lazily
  // created cuBLAS workspaces) stay below it.
  std::uint64_t min_growth_bytes = 256ull << 20;
  // Large against allocator granularity (2 MiB) so one sample stands for real growth; four
  // samples (min_samples) then need as much new high water as min_growth_bytes.
  std::uint64_t high_water_step_bytes = 64ull << 20;
  std::uint32_t min_samples = 4;
  double probability_threshold = 0.75;
  // Oldest samples beyond this are forgotten and stay counted as unfreed.
  std::size_t max_sampled_blocks = 4096;
};

struct LeakVerdict {
  bool suspected = false;
  bool trend = false;     // test (a) holds
  double probability = 0; // test (b): (unfreed + 1) / (sampled + 2)
  // Least-squares slope of the window minimums over the last `windows` complete windows, never
  // negative. Reported with or without the trend, e.g. for a gauge.
  double growth_bytes_per_second = 0;
  // device_free_bytes / growth, when both are known and growth > 0.
  std::optional<double> seconds_until_full;
  std::uint64_t used_bytes = 0;
  std::uint64_t sampled = 0;
  std::uint64_t unfreed = 0;
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

private:
  struct Window {
    std::uint64_t index = 0; // time_ns / window length
    std::uint64_t min_used = 0;
  };

  void advance_to(std::uint64_t index);
  void track_samples(const MemoryChange &change);
  void forget_sample(std::uint64_t address);
  std::vector<Window> last_complete_windows(std::uint64_t now_ns) const;

  LeakSettings settings_;
  std::uint64_t window_ns_;
  std::size_t windows_;

  std::vector<Window> closed_; // oldest first, contiguous indices, at most windows_
  std::optional<Window> current_;
  std::uint64_t level_ = 0; // used_after of the latest change

  std::uint64_t high_water_ = 0;
  std::uint64_t sampled_ = 0;
  std::uint64_t freed_ = 0;
  std::uint64_t next_sample_ = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> sample_of_address_;
  std::map<std::uint64_t, std::uint64_t> address_of_sample_; // oldest sample first
};

} // namespace neutracer
