// SPDX-License-Identifier: Apache-2.0
#pragma once
// Per-process evidence about failed GPU allocations: the cause of each failure, allocator
// retries (a failure, frees, then a successful retry) and the layout of the process's live
// driver allocations. Pure: the caller passes the changes and, where known, the device's free
// bytes (NVML).
//
// The driver sees segments, not what a framework's cache does with them: a process whose
// segments add up to the request but are each smaller may be using every byte of them. A
// `fragmentation` cause is therefore evidence, not proof: a caching allocator cannot merge
// separate driver allocations, so if those pieces were cached and free, the request could only
// have been served after releasing them.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cuda/memory_change.h"

namespace neutracer {

enum class OomCause : std::uint8_t { capacity, fragmentation };
inline constexpr std::size_t kOomCauses = 2;
std::string_view oom_cause_name(OomCause cause);

struct FragmentationSettings {
  // PyTorch frees its cache and retries at once; two seconds allows for a slow flush.
  double retry_window_seconds = 2;
  std::uint32_t storm_retries = 3; // 0 disables storms
  double storm_window_seconds = 60;
  // Allocations beyond this are not tracked (counted in untracked_segments()).
  std::size_t max_live_segments = 1 << 20;
  // Undrained OOM events beyond this are dropped (counted in dropped_events()).
  std::size_t max_pending_events = 1024;
};

struct OomEvent {
  std::uint64_t time_ns = 0;
  std::uint64_t requested_bytes = 0;
  std::uint64_t used_bytes = 0; // the process's GPU-resident bytes at the failure
  std::optional<std::uint64_t> device_free_bytes;
  OomCause cause = OomCause::capacity;
  std::uint32_t error = 0; // CUresult
};

class OomClassifier {
public:
  explicit OomClassifier(FragmentationSettings settings = {});

  // Changes of one process in time order. `device_free_bytes` is the device's free memory read
  // for this batch (absent without NVML); a reading taken after the failure weakens the evidence.
  void observe(std::span<const MemoryChange> changes,
               std::optional<std::uint64_t> device_free_bytes);

  // Failed allocations since the last call, oldest first.
  std::vector<OomEvent> take_oom_events();

  std::uint64_t retries() const { return retries_; }
  std::uint64_t oom_count(OomCause cause) const;
  // At least storm_retries retries within storm_window_seconds before `now_ns`.
  bool retry_storm(std::uint64_t now_ns) const;

  // 1 - largest live segment / live bytes; 0 when nothing is live.
  double fragmentation_ratio() const;
  std::uint64_t largest_segment() const;
  std::size_t segment_count() const { return live_.size(); }
  std::uint64_t live_bytes() const { return live_bytes_; }
  std::uint64_t untracked_segments() const { return untracked_segments_; }
  std::uint64_t dropped_events() const { return dropped_events_; }

private:
  struct PendingFailure {
    std::uint64_t time_ns = 0;
    std::uint64_t requested_bytes = 0;
    bool freed_since = false;
  };

  void on_allocation(const MemoryChange &change);
  void on_free(const MemoryChange &change);
  void on_failure(const MemoryChange &change, std::optional<std::uint64_t> device_free_bytes);
  void add_segment(std::uint64_t address, std::uint64_t bytes);
  void remove_segment(std::uint64_t address);
  void expire_failures(std::uint64_t now_ns);

  FragmentationSettings settings_;
  std::uint64_t retry_window_ns_;
  std::uint64_t storm_window_ns_;

  std::unordered_map<std::uint64_t, std::uint64_t> live_;   // address -> bytes
  std::map<std::uint64_t, std::uint64_t> segments_by_size_; // bytes -> count, for the largest
  std::uint64_t live_bytes_ = 0;
  std::uint64_t untracked_segments_ = 0;

  std::vector<PendingFailure> pending_failures_; // at most kMaxPendingFailures
  std::uint64_t retries_ = 0;
  std::vector<std::uint64_t> recent_retries_; // times of the last storm_retries retries

  std::vector<OomEvent> events_;
  std::uint64_t dropped_events_ = 0;
  std::uint64_t oom_counts_[kOomCauses] = {};
};

} // namespace neutracer
