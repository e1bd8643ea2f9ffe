// SPDX-License-Identifier: Apache-2.0
#pragma once
// One process's tensor blocks, as PyTorch's caching allocator hands them out and takes them back,
// while the allocator view is open (allocator/investigation.h). Pure: times are passed in.
//
// The probes sample blocks by bytes (a block of `sample_bytes` or more always, a smaller one with
// probability bytes / sample_bytes), so each tracked block carries the bytes it stands for: its
// `weight`. Blocks handed out before the view opened are unknown, and their frees are ignored:
// everything here is growth since the view opened.
//
// A leak's blocks outlive the step that made them; a step's temporaries do not. So sites are
// ranked by the weight of their *survivors*: live blocks at least `survivor_age_seconds` old.
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace neutracer {

struct BlockLedgerSettings {
  // Longer than a training or serving step (temporaries die within it), short against an alert.
  double survivor_age_seconds = 2;
  // Live blocks kept per process; allocations beyond are counted in `untracked()`, not kept.
  std::size_t max_blocks = 1 << 16;
};

struct BlockAllocation {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;  // the block's own size
  std::uint64_t weight = 0; // the bytes it stands for (>= bytes)
  std::int32_t site = -1;   // call site index (stacks/), -1 when unknown
  std::uint64_t time_ns = 0;
};

struct SiteLiveBytes {
  std::int32_t site = -1;
  std::uint64_t survivor_bytes = 0; // weight of live blocks at least survivor_age old
  std::uint64_t live_bytes = 0;     // weight of all live blocks
  std::uint64_t live_blocks = 0;
};

class BlockLedger {
public:
  explicit BlockLedger(BlockLedgerSettings settings = {});

  // A block handed out. An address already live replaces the old block (its free was lost).
  void allocated(const BlockAllocation &block);
  // A block taken back; addresses not tracked (handed out before the view, or not sampled) are
  // ignored.
  void freed(std::uint64_t address);

  // Weight of all live tracked blocks.
  std::uint64_t live_bytes() const { return live_bytes_; }
  std::size_t live_blocks() const { return blocks_.size(); }
  // Allocations not kept because max_blocks were live.
  std::uint64_t untracked() const { return untracked_; }

  // Sites with live blocks, most survivor bytes first (then most live bytes, then lowest site).
  std::vector<SiteLiveBytes> ranking(std::uint64_t now_ns) const;

private:
  struct Block {
    std::uint64_t weight = 0;
    std::int32_t site = -1;
    std::uint64_t time_ns = 0;
  };
  BlockLedgerSettings settings_;
  std::unordered_map<std::uint64_t, Block> blocks_;
  std::uint64_t live_bytes_ = 0;
  std::uint64_t untracked_ = 0;
};

} // namespace neutracer
