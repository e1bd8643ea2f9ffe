// SPDX-License-Identifier: Apache-2.0
#include "nccl/straggler.h"

#include <algorithm>
#include <cstddef>

namespace neutracer {
namespace {

double median_of(std::vector<double> values) {
  if (values.empty())
    return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// Adds `newer`'s counts to `into`, which keeps its time: the merged tally leaves the window
// with its oldest scan.
void merge_into(StragglerTally &into, const StragglerTally &newer) {
  const auto scans = into.scans + newer.scans;
  into.median_wait_seconds = (into.median_wait_seconds * static_cast<double>(into.scans) +
                              newer.median_wait_seconds * static_cast<double>(newer.scans)) /
                             static_cast<double>(scans);
  into.scans = scans;
  into.collectives += newer.collectives;
  for (const auto &[rank, count] : newer.last)
    into.last[rank] += count;
  for (const auto &[rank, seconds] : newer.waited)
    into.waited[rank] += seconds;
}

} // namespace

StragglerTally tally_collectives(const std::vector<NcclRank> &ranks, std::uint64_t &next,
                                 std::uint64_t since_ns, std::uint64_t now_ns) {
  StragglerTally tally;
  tally.at_ns = now_ns;
  if (ranks.size() < 2)
    return tally;
  // The collectives every rank still holds an arrival time for: [first, end).
  std::uint64_t first = 0, end = UINT64_MAX, most = 0;
  for (const auto &rank : ranks) {
    const auto &comm = *rank.communicator;
    first = std::max(first, comm.collectives - comm.arrivals.size());
    end = std::min(end, comm.collectives);
    most = std::max(most, comm.collectives);
  }
  if (next > most) // every rank numbered afresh (the job restarted); one behind is waited for
    next = first;
  std::vector<double> waits;
  for (std::uint64_t k = std::max(first, next); k < end; ++k) {
    std::uint64_t earliest = UINT64_MAX, latest = 0;
    const NcclRank *last = nullptr;
    bool known = true;
    for (const auto &rank : ranks) {
      const auto &comm = *rank.communicator;
      const auto at = comm.arrivals[k - (comm.collectives - comm.arrivals.size())];
      known = known && at != kUnknownArrival;
      earliest = std::min(earliest, at);
      if (at >= latest) {
        latest = at;
        last = &rank;
      }
    }
    if (!known || latest < since_ns) // a lost event, or older than the window
      continue;
    const double wait = static_cast<double>(latest - earliest) / 1e9;
    const StragglerRankKey key{last->process, last->handle};
    ++tally.last[key];
    tally.waited[key] += wait;
    waits.push_back(wait);
  }
  next = std::max(next, end);
  tally.collectives = waits.size();
  tally.median_wait_seconds = median_of(std::move(waits));
  return tally;
}

StragglerHistory::StragglerHistory(StragglerSettings settings) : settings_(settings) {}

std::optional<Straggler> StragglerHistory::judge(const std::string &id,
                                                 const std::vector<NcclRank> &ranks,
                                                 std::uint64_t now_ns) {
  if (ranks.size() < 2)
    return std::nullopt;
  auto &history = histories_[id];
  if (!history.tallies.empty()) // never backwards: the tallies' times stay in order
    now_ns = std::max(now_ns, history.tallies.back().at_ns);
  const auto window_ns = static_cast<std::uint64_t>(std::max(0.0, settings_.window_seconds) * 1e9);
  const std::uint64_t since = now_ns > window_ns ? now_ns - window_ns : 0;
  auto tally = tally_collectives(ranks, history.next, since, now_ns);
  // Scans closer than the window over half max_tallies share a tally: short scans in a long
  // window keep max_tallies / 2 or so.
  const auto bucket_ns = window_ns / std::max<std::size_t>(settings_.max_tallies / 2, 1);
  auto &tallies = history.tallies;
  if (tally.collectives > 0 && !tallies.empty() && tally.at_ns - tallies.back().at_ns < bucket_ns)
    merge_into(tallies.back(), tally);
  else if (tally.collectives > 0)
    tallies.push_back(std::move(tally));
  while (!tallies.empty() &&
         (tallies.front().at_ns < since || tallies.size() > settings_.max_tallies))
    tallies.pop_front();
  // Spread over half the window at least: a burst (a job's set-up) is no consistent lateness.
  if (tallies.size() < 2 || tallies.back().at_ns - tallies.front().at_ns < window_ns / 2)
    return std::nullopt;
  // Each scan weighs the same, whatever the number of its collectives.
  std::size_t collectives = 0, scans = 0;
  std::map<StragglerRankKey, double> wait_share, last_share;
  std::vector<double> medians; // one per scan
  for (const auto &t : tallies) {
    const auto weight = static_cast<double>(t.scans);
    collectives += t.collectives;
    scans += t.scans;
    medians.insert(medians.end(), t.scans, t.median_wait_seconds);
    double waited = 0;
    for (const auto &[rank, seconds] : t.waited)
      waited += seconds;
    for (const auto &[rank, seconds] : t.waited)
      if (waited > 0)
        wait_share[rank] += weight * seconds / waited;
    for (const auto &[rank, count] : t.last)
      last_share[rank] += weight * static_cast<double>(count) / static_cast<double>(t.collectives);
  }
  if (collectives < settings_.min_collectives || wait_share.empty())
    return std::nullopt;
  const auto most =
      std::max_element(wait_share.begin(), wait_share.end(),
                       [](const auto &a, const auto &b) { return a.second < b.second; });
  const auto rank = std::find_if(ranks.begin(), ranks.end(), [&](const NcclRank &r) {
    return StragglerRankKey{r.process, r.handle} == most->first;
  });
  if (rank == ranks.end()) // it left the communicator
    return std::nullopt;
  const auto n = static_cast<double>(scans);
  Straggler straggler{*rank, most->second / n, last_share[most->first] / n,
                      median_of(std::move(medians)), collectives};
  if (straggler.wait_share < settings_.min_wait_share ||
      straggler.last_share < settings_.min_last_share ||
      straggler.median_wait_seconds < settings_.min_median_wait_seconds)
    return std::nullopt;
  return straggler;
}

void StragglerHistory::keep_only(const std::vector<std::string> &ids) {
  std::erase_if(histories_, [&](const auto &entry) {
    return std::find(ids.begin(), ids.end(), entry.first) == ids.end();
  });
}

} // namespace neutracer
