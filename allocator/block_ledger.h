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
//
// A freed block stays in the pool, cached, until the allocator hands out its bytes again: the
// ledger keeps those too, so the memory page can draw the blocks inside each segment.
#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace neutracer {

struct BlockLedgerSettings {
  // Longer than a training or serving step (temporaries die within it), short against an alert.
  double survivor_age_seconds = 2;
  // Live blocks kept per process; allocations beyond are counted in `untracked()`, not kept.
  // Cached (freed) blocks are bounded by the same number; beyond it a free is not kept.
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

// A sampled block as the memory page draws it: handed out (live) or back in the pool (cached).
struct TensorBlock {
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::int32_t site = -1;
  bool live = true;
  std::uint64_t time_ns = 0; // handed out (live) or freed (cached)
};

class BlockLedger {
public:
  explicit BlockLedger(BlockLedgerSettings settings = {});

  // A block handed out. An address already live replaces the old block (its free was lost).
  void allocated(const BlockAllocation &block);
  // A block taken back at `time_ns`; addresses not tracked (handed out before the view, or not
  // sampled) are ignored.
  void freed(std::uint64_t address, std::uint64_t time_ns);

  // Weight of all live tracked blocks.
  std::uint64_t live_bytes() const { return live_bytes_; }
  std::size_t live_blocks() const { return blocks_.size(); }
  // Allocations not kept because max_blocks were live.
  std::uint64_t untracked() const { return untracked_; }

  // Sites with live blocks, most survivor bytes first (then most live bytes, then lowest site).
  std::vector<SiteLiveBytes> ranking(std::uint64_t now_ns) const;
  // Live and cached blocks, by address.
  std::vector<TensorBlock> blocks() const;
  std::size_t cached_blocks() const { return cached_.size(); }
  // Forgets the blocks and keeps the totals: a closed view keeps its figures, not its memory.
  void drop_blocks();

private:
  struct Block {
    std::uint64_t bytes = 0;
    std::uint64_t weight = 0;
    std::int32_t site = -1;
    std::uint64_t time_ns = 0;
  };
  // Cached blocks that the range [address, address + bytes) overlaps are handed out again.
  void reuse_cached(std::uint64_t address, std::uint64_t bytes);

  BlockLedgerSettings settings_;
  std::unordered_map<std::uint64_t, Block> blocks_;
  std::map<std::uint64_t, Block> cached_; // by address; time_ns: when freed
  std::uint64_t live_bytes_ = 0;
  std::uint64_t untracked_ = 0;
};

} // namespace neutracer
