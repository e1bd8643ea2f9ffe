// SPDX-License-Identifier: Apache-2.0
#include "nccl/straggler.h"

#include <algorithm>

namespace neutracer {

std::optional<Straggler> find_straggler(const std::vector<NcclRank> &ranks, std::uint64_t now_ns,
                                        const StragglerSettings &settings) {
  if (ranks.size() < 2)
    return std::nullopt;
  // The collectives every rank still holds an arrival time for: [first, end).
  std::uint64_t first = 0, end = UINT64_MAX;
  for (const auto &rank : ranks) {
    const auto &comm = *rank.communicator;
    first = std::max(first, comm.collectives - comm.arrivals.size());
    end = std::min(end, comm.collectives);
  }
  const auto window_ns = static_cast<std::uint64_t>(std::max(0.0, settings.window_seconds) * 1e9);
  const std::uint64_t since = now_ns > window_ns ? now_ns - window_ns : 0;
  std::vector<double> waited(ranks.size(), 0.0);
  double total = 0;
  std::size_t collectives = 0;
  for (std::uint64_t k = first; k < end; ++k) {
    std::uint64_t earliest = UINT64_MAX, latest = 0;
    std::size_t last = 0;
    bool known = true;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      const auto &comm = *ranks[r].communicator;
      const auto at = comm.arrivals[k - (comm.collectives - comm.arrivals.size())];
      known = known && at != kUnknownArrival;
      earliest = std::min(earliest, at);
      if (at >= latest) {
        latest = at;
        last = r;
      }
    }
    if (!known || latest < since) // a lost event: who came last is not known
      continue;
    const double wait = static_cast<double>(latest - earliest) / 1e9;
    waited[last] += wait;
    total += wait;
    ++collectives;
  }
  if (collectives < settings.min_collectives || collectives == 0 || total <= 0)
    return std::nullopt;
  const auto most =
      static_cast<std::size_t>(std::max_element(waited.begin(), waited.end()) - waited.begin());
  Straggler straggler{ranks[most], waited[most] / total, total / static_cast<double>(collectives),
                      collectives};
  if (straggler.wait_share < settings.min_wait_share ||
      straggler.mean_wait_seconds < settings.min_mean_wait_seconds)
    return std::nullopt;
  return straggler;
}

} // namespace neutracer
