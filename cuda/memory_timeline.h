// SPDX-License-Identifier: Apache-2.0
#pragma once
// A bounded history of each process's GPU allocations (address, size, lifetime) and failed
// allocations, for the memory timeline page. Pure: fed with the memory change log.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda/cuda_discovery.h"
#include "cuda/memory_change.h"

namespace neutracer {

struct TimelineBlock {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint64_t allocated_ns = 0;
  std::uint64_t freed_ns = 0; // 0 while live
  std::int32_t site = -1;     // the call site's index among the process's sites; -1 unknown
};

struct TimelineFailure {
  std::uint64_t time_ns = 0;
  std::uint64_t bytes = 0; // requested
  std::int32_t site = -1;  // as in TimelineBlock
};

struct ProcessTimeline {
  std::deque<TimelineBlock> blocks; // oldest first
  std::deque<TimelineFailure> failures;
  std::uint64_t dropped_blocks = 0; // oldest records forgotten to stay within the bound
};

// Blocks kept over every process (2 MiB of blocks; about three times that with the live
// address index and the copy published for /memory). Beyond it the process holding the most
// blocks forgets its oldest.
inline constexpr std::size_t kMaxTimelineBlocksInTotal = 65536;

class MemoryTimeline {
public:
  explicit MemoryTimeline(std::size_t max_blocks = 4096, std::size_t max_failures = 256,
                          std::size_t max_total_blocks = kMaxTimelineBlocksInTotal);

  // `site_of`, when given, names the call site of each allocation and failed allocation.
  void record(const ProcessId &id, std::span<const MemoryChange> changes,
              const std::function<std::int32_t(const MemoryChange &)> &site_of = {});
  void forget(const ProcessId &id);

  const std::map<ProcessId, ProcessTimeline> &processes() const { return timelines_; }
  std::size_t total_blocks() const { return total_blocks_; }

private:
  struct Live {
    std::unordered_map<std::uint64_t, std::uint64_t> sequence_of_address;
    std::uint64_t front_sequence = 0; // sequence number of blocks.front()
  };
  void drop_oldest(const ProcessId &id);

  std::size_t max_blocks_;
  std::size_t max_failures_;
  std::size_t max_total_blocks_;
  std::size_t total_blocks_ = 0;
  std::map<ProcessId, ProcessTimeline> timelines_;
  std::map<ProcessId, Live> live_;
  std::set<std::pair<std::size_t, ProcessId>> by_size_; // (blocks, process), largest last
};

} // namespace neutracer
