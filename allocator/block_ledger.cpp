// SPDX-License-Identifier: Apache-2.0
#include "allocator/block_ledger.h"

#include <algorithm>
#include <iterator>
#include <tuple>

namespace neutracer {

BlockLedger::BlockLedger(BlockLedgerSettings settings) : settings_(settings) {}

void BlockLedger::allocated(const BlockAllocation &block) {
  // A block stands for at least its own bytes, whatever the probe reported.
  const Block kept{block.bytes, std::max(block.weight, block.bytes), block.site, block.time_ns};
  reuse_cached(block.address, block.bytes);
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

void BlockLedger::freed(std::uint64_t address, std::uint64_t time_ns) {
  const auto live = blocks_.find(address);
  if (live == blocks_.end())
    return;
  live_bytes_ -= live->second.weight;
  if (cached_.size() < settings_.max_blocks) {
    Block cached = live->second;
    cached.time_ns = time_ns;
    cached_.insert_or_assign(address, cached);
  }
  blocks_.erase(live);
}

void BlockLedger::reuse_cached(std::uint64_t address, std::uint64_t bytes) {
  if (cached_.empty())
    return;
  const std::uint64_t end = address + std::max<std::uint64_t>(bytes, 1);
  auto it = cached_.lower_bound(address);
  // The block before may reach into the range.
  if (it != cached_.begin()) {
    const auto before = std::prev(it);
    if (before->first + before->second.bytes > address)
      it = before;
  }
  while (it != cached_.end() && it->first < end)
    it = cached_.erase(it);
}

void BlockLedger::drop_blocks() {
  // Swapped with empty maps: clear() keeps an unordered_map's buckets.
  std::unordered_map<std::uint64_t, Block>().swap(blocks_);
  std::map<std::uint64_t, Block>().swap(cached_);
}

std::vector<TensorBlock> BlockLedger::blocks() const {
  std::vector<TensorBlock> all;
  all.reserve(blocks_.size() + cached_.size());
  for (const auto &[address, block] : blocks_)
    all.push_back({address, block.bytes, block.site, true, block.time_ns});
  for (const auto &[address, block] : cached_)
    all.push_back({address, block.bytes, block.site, false, block.time_ns});
  std::sort(all.begin(), all.end(), [](const TensorBlock &a, const TensorBlock &b) {
    return std::tie(a.address, a.live) < std::tie(b.address, b.live);
  });
  return all;
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
