#include "cuda/memory_timeline.h"

#include <algorithm>

namespace neutracer {

MemoryTimeline::MemoryTimeline(std::size_t max_blocks, std::size_t max_failures)
    : max_blocks_(std::max<std::size_t>(1, max_blocks)), max_failures_(max_failures) {}

void MemoryTimeline::record(const ProcessId &id, std::span<const MemoryChange> changes) {
  auto &timeline = timelines_[id];
  auto &live = live_[id];
  for (const auto &change : changes) {
    switch (change.kind) {
    case MemoryChangeKind::allocation: {
      if (timeline.blocks.size() == max_blocks_) {
        live.sequence_of_address.erase(timeline.blocks.front().address);
        timeline.blocks.pop_front();
        ++live.front_sequence;
        ++timeline.dropped_blocks;
      }
      live.sequence_of_address[change.address] = live.front_sequence + timeline.blocks.size();
      timeline.blocks.push_back({change.address, change.bytes, change.time_ns, 0});
      break;
    }
    case MemoryChangeKind::free: {
      const auto found = live.sequence_of_address.find(change.address);
      if (found == live.sequence_of_address.end())
        break; // allocated before the daemon attached, or already forgotten
      timeline.blocks[found->second - live.front_sequence].freed_ns = change.time_ns;
      live.sequence_of_address.erase(found);
      break;
    }
    case MemoryChangeKind::failed_allocation:
      if (timeline.failures.size() == max_failures_ && !timeline.failures.empty())
        timeline.failures.pop_front();
      if (max_failures_ > 0)
        timeline.failures.push_back({change.time_ns, change.bytes});
      break;
    }
  }
}

void MemoryTimeline::forget(const ProcessId &id) {
  timelines_.erase(id);
  live_.erase(id);
}

} // namespace neutracer
