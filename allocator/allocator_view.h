// SPDX-License-Identifier: Apache-2.0
#pragma once
// What one process's allocator view holds (docs/allocator-view.md): open now, or the last one
// while the process lives. Owned by its collector; read by the exporters and the detectors.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "allocator/block_ledger.h"
#include "allocator/investigation.h"
#include "allocator/live_bytes_trend.h"

namespace neutracer {

// Why a view could not open, for neutracer_allocator_view_failures_total{reason}.
enum class AllocatorViewFailure { no_library, no_probes, attach };
inline constexpr std::size_t kAllocatorViewFailures = 3;
std::string_view allocator_view_failure_name(AllocatorViewFailure failure);

struct AllocatorView {
  AllocatorView(const BlockLedgerSettings &ledger_settings,
                const LiveBytesTrendSettings &trend_settings)
      : ledger(ledger_settings), trend(trend_settings) {}

  bool open = false;
  InvestigationReason reason = InvestigationReason::growth;
  std::uint64_t opened_ns = 0;
  std::uint64_t closed_ns = 0; // 0 while open
  std::string library;         // libc10_cuda.so, as the process maps it
  BlockLedger ledger;
  LiveBytesTrend trend;
  LiveBytesVerdict verdict;           // at the last scan
  std::vector<SiteLiveBytes> ranking; // at the last scan (kept once closed)
  std::uint64_t allocations_seen = 0; // sampled allocations received
  std::uint64_t frees_seen = 0;       // frees of sampled blocks received
  bool ever_rising = false;           // the verdict held at some scan of this view
};

// What the HTTP threads see of a view: copied at each scan into the published snapshot, for
// /api/v1/processes/<pid>/sites (the ranking) and the memory page (the blocks).
struct AllocatorViewSummary {
  bool open = false;
  InvestigationReason reason = InvestigationReason::growth;
  std::uint64_t live_bytes = 0;
  std::vector<SiteLiveBytes> ranking;
  // Live and cached, by address; empty once the view closed. At most `max_blocks`, the largest:
  // small blocks draw as slivers, and the snapshot stays small.
  std::vector<TensorBlock> blocks;
  std::uint64_t blocks_left_out = 0;
};
inline constexpr std::size_t kMaxSummaryBlocks = 8192;
AllocatorViewSummary summary_of(const AllocatorView &view,
                                std::size_t max_blocks = kMaxSummaryBlocks);

} // namespace neutracer
