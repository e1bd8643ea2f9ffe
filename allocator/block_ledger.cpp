// SPDX-License-Identifier: Apache-2.0
#include "allocator/block_ledger.h"

#include <algorithm>
#include <tuple>

namespace neutracer {

BlockLedger::BlockLedger(BlockLedgerSettings settings) : settings_(settings) {}

void BlockLedger::allocated(const BlockAllocation &block) {
  // A block stands for at least its own bytes, whatever the probe reported.
  const Block kept{std::max(block.weight, block.bytes), block.site, block.time_ns};
  if (const auto live = blocks_.find(block.address); live != blocks_.end()) {
    live_bytes_ -= live->second.weight;
    live->second = kept;
    live_bytes_ += kept.weight;
    return;
  }
  if (blocks_.size() >= settings_.max_blocks) {
    ++untracked_;
    return;
  }
  blocks_.emplace(block.address, kept);
  live_bytes_ += kept.weight;
}

void BlockLedger::freed(std::uint64_t address) {
  const auto live = blocks_.find(address);
  if (live == blocks_.end())
    return;
  live_bytes_ -= live->second.weight;
  blocks_.erase(live);
}

std::vector<SiteLiveBytes> BlockLedger::ranking(std::uint64_t now_ns) const {
  const auto survivor_age_ns =
      static_cast<std::uint64_t>(std::max(0.0, settings_.survivor_age_seconds) * 1e9);
  std::unordered_map<std::int32_t, SiteLiveBytes> by_site;
  for (const auto &[address, block] : blocks_) {
    auto &site = by_site.try_emplace(block.site, SiteLiveBytes{.site = block.site}).first->second;
    site.live_bytes += block.weight;
    ++site.live_blocks;
    // A block dated after `now` (a late scan clock) is young, not a survivor.
    if (now_ns >= block.time_ns && now_ns - block.time_ns >= survivor_age_ns)
      site.survivor_bytes += block.weight;
  }
  std::vector<SiteLiveBytes> ranking;
  ranking.reserve(by_site.size());
  for (const auto &[site, bytes] : by_site)
    ranking.push_back(bytes);
  std::sort(ranking.begin(), ranking.end(), [](const SiteLiveBytes &a, const SiteLiveBytes &b) {
    return std::tie(b.survivor_bytes, b.live_bytes, a.site) <
           std::tie(a.survivor_bytes, a.live_bytes, b.site);
  });
  return ranking;
}

} // namespace neutracer
