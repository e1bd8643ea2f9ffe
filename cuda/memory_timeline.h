#pragma once
// A bounded history of each process's GPU allocations (address, size, lifetime) and failed
// allocations, for the memory timeline page. Pure: fed with the memory change log.
#include <cstdint>
#include <deque>
#include <map>
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
};

struct TimelineFailure {
  std::uint64_t time_ns = 0;
  std::uint64_t bytes = 0; // requested
};

struct ProcessTimeline {
  std::deque<TimelineBlock> blocks; // oldest first
  std::deque<TimelineFailure> failures;
  std::uint64_t dropped_blocks = 0; // oldest records forgotten to stay within the bound
};

class MemoryTimeline {
public:
  explicit MemoryTimeline(std::size_t max_blocks = 4096, std::size_t max_failures = 256);

  void record(const ProcessId &id, std::span<const MemoryChange> changes);
  void forget(const ProcessId &id);

  const std::map<ProcessId, ProcessTimeline> &processes() const { return timelines_; }

private:
  struct Live {
    std::unordered_map<std::uint64_t, std::uint64_t> sequence_of_address;
    std::uint64_t front_sequence = 0; // sequence number of blocks.front()
  };
  std::size_t max_blocks_;
  std::size_t max_failures_;
  std::map<ProcessId, ProcessTimeline> timelines_;
  std::map<ProcessId, Live> live_;
};

} // namespace neutracer
