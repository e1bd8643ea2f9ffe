// SPDX-License-Identifier: Apache-2.0
#include "cuda/memory_timeline.h"

#include <algorithm>
#include <iterator>

namespace neutracer {

MemoryTimeline::MemoryTimeline(std::size_t max_blocks, std::size_t max_failures,
                               std::size_t max_total_blocks)
    : max_blocks_(std::max<std::size_t>(1, max_blocks)), max_failures_(max_failures),
      max_total_blocks_(std::max<std::size_t>(1, max_total_blocks)) {}

void MemoryTimeline::drop_oldest(const ProcessId &id) {
  auto &timeline = timelines_.at(id);
  auto &live = live_.at(id);
  by_size_.erase({timeline.blocks.size(), id});
  // Only if the address still maps to this block: it may have been freed and handed out again.
  if (const auto found = live.sequence_of_address.find(timeline.blocks.front().address);
      found != live.sequence_of_address.end() && found->second == live.front_sequence)
    live.sequence_of_address.erase(found);
  timeline.blocks.pop_front();
  ++live.front_sequence;
  ++timeline.dropped_blocks;
  --total_blocks_;
  by_size_.insert({timeline.blocks.size(), id});
}

void MemoryTimeline::record(const ProcessId &id, std::span<const MemoryChange> changes,
                            const std::function<std::int32_t(const MemoryChange &)> &site_of) {
  auto &timeline = timelines_[id];
  auto &live = live_[id];
  for (const auto &change : changes) {
    switch (change.kind) {
    case MemoryChangeKind::allocation: {
      if (timeline.blocks.size() == max_blocks_)
        drop_oldest(id);
      else if (total_blocks_ >= max_total_blocks_)
        drop_oldest(std::prev(by_size_.end())->second); // the largest; perhaps this one
      by_size_.erase({timeline.blocks.size(), id});
      live.sequence_of_address[change.address] = live.front_sequence + timeline.blocks.size();
      timeline.blocks.push_back(
          {change.address, change.bytes, change.time_ns, 0, site_of ? site_of(change) : -1});
      ++total_blocks_;
      by_size_.insert({timeline.blocks.size(), id});
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
        timeline.failures.push_back({change.time_ns, change.bytes, site_of ? site_of(change) : -1});
      break;
    }
  }
}

void MemoryTimeline::forget(const ProcessId &id) {
  if (const auto it = timelines_.find(id); it != timelines_.end()) {
    total_blocks_ -= it->second.blocks.size();
    by_size_.erase({it->second.blocks.size(), id});
    timelines_.erase(it);
  }
  live_.erase(id);
}

} // namespace neutracer
