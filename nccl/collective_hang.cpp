// SPDX-License-Identifier: Apache-2.0
#include "nccl/collective_hang.h"

#include <algorithm>

namespace neutracer {

std::optional<CollectiveHang> find_collective_hang(const std::vector<NcclRank> &ranks,
                                                   std::uint64_t now_ns,
                                                   const CollectiveHangSettings &settings) {
  if (ranks.size() < 2)
    return std::nullopt;
  std::uint64_t most = 0, least = UINT64_MAX, latest_call_ns = 0;
  for (const auto &rank : ranks) {
    most = std::max(most, rank.communicator->collectives);
    least = std::min(least, rank.communicator->collectives);
    latest_call_ns = std::max(latest_call_ns, rank.communicator->last_call_ns);
  }
  if (most == least)
    return std::nullopt; // all stopped at the same collective, or all running
  const double stalled =
      now_ns > latest_call_ns ? static_cast<double>(now_ns - latest_call_ns) / 1e9 : 0.0;
  if (stalled < settings.stall_seconds)
    return std::nullopt;
  CollectiveHang hang;
  hang.collective = most;
  hang.stalled_seconds = stalled;
  for (const auto &rank : ranks) {
    if (rank.communicator->collectives == most) {
      hang.waiting.push_back(rank);
      hang.op = rank.communicator->last_op;
    } else {
      hang.behind.push_back(rank);
    }
  }
  return hang;
}

} // namespace neutracer
