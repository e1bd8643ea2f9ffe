// SPDX-License-Identifier: Apache-2.0
#include "exporters/nccl_ras_metrics.h"

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <utility>

namespace neutracer {
namespace {

// NCCL's hash names a communicator across the job; the secondary one tells apart those with
// the same hash (splits).
Labels communicator_labels(const RasCommunicator &comm) {
  return {{"comm_hash", comm.hash}, {"comm_hash2", comm.secondary_hash}};
}

// Per operation, the fewest and the most collectives any reporting rank launched: a spread
// that stays open means some rank is behind the others.
std::map<std::string, std::pair<std::uint64_t, std::uint64_t>>
collective_spread(const RasCommunicator &comm) {
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> spread;
  for (const auto &rank : comm.ranks)
    for (const auto &[op, count] : rank.collectives) {
      const auto [entry, added] = spread.try_emplace(op, count, count);
      if (!added) {
        entry->second.first = std::min(entry->second.first, count);
        entry->second.second = std::max(entry->second.second, count);
      }
    }
  // An operation a rank never launched counts as 0 for it.
  for (auto &[op, range] : spread)
    for (const auto &rank : comm.ranks)
      if (!rank.collectives.contains(op))
        range.first = 0;
  return spread;
}

} // namespace

void write_nccl_ras_metrics(const RasSnapshot &snapshot, MetricSink &sink) {
  sink.family("neutracer_nccl_ras_polls_total",
              "Queries of NCCL's RAS service, by result: ok, no_answer (nothing listens, or no "
              "full reply before nccl.ras_timeout), bad_reply (not a status this can read).",
              MetricType::counter);
  for (const auto result : {RasPollResult::ok, RasPollResult::no_answer, RasPollResult::bad_reply})
    sink.sample({}, {{"result", ras_poll_result_name(result)}},
                static_cast<double>(snapshot.polls[static_cast<std::size_t>(result)]));
  sink.family("neutracer_nccl_ras_up",
              "1 when the last query of NCCL's RAS service returned a status; the other "
              "neutracer_nccl_ras_* series come from it.",
              MetricType::gauge);
  sink.sample({}, snapshot.last == RasPollResult::ok ? 1 : 0);
  sink.family("neutracer_nccl_ras_poll_seconds", "How long the last query took, connect to close.",
              MetricType::gauge);
  sink.sample({}, snapshot.last_poll_seconds);
  // Without a status the families are written empty: the rules and dashboards that name them
  // find them in every scrape of a daemon that asks.
  static const RasStatus kNoStatus;
  const auto &status = snapshot.status ? *snapshot.status : kNoStatus;
  const auto shown = std::min(status.communicators.size(), kRasMaxCommunicators);
  std::size_t dropped = status.communicators.size() - shown;

  sink.family("neutracer_nccl_ras_collection_seconds",
              "How long NCCL took to gather the last status across the job.", MetricType::gauge);
  if (snapshot.status)
    sink.sample({}, status.collection_seconds);
  // One family with each shown communicator's samples, written by `samples`.
  const auto per_communicator =
      [&](std::string_view name, std::string_view help,
          const std::function<void(const RasCommunicator &, const Labels &)> &samples) {
        sink.family(name, help, MetricType::gauge);
        for (std::size_t i = 0; i < shown; ++i)
          samples(status.communicators[i], communicator_labels(status.communicators[i]));
      };
  per_communicator(
      "neutracer_nccl_ras_ranks",
      "Ranks of each communicator of the job by state: reporting (answered the last status), "
      "missing (did not), dead (NCCL gave up on it: unreachable for 60 s).",
      [&](const RasCommunicator &comm, const Labels &labels) {
        const auto dead = std::count_if(comm.missing.begin(), comm.missing.end(),
                                        [](const auto &rank) { return rank.considered_dead; });
        sink.sample(labels, {{"state", "reporting"}}, static_cast<double>(comm.ranks.size()));
        sink.sample(labels, {{"state", "missing"}}, static_cast<double>(comm.missing.size()));
        sink.sample(labels, {{"state", "dead"}}, static_cast<double>(dead));
      });
  per_communicator(
      "neutracer_nccl_ras_rank_errors",
      "Reporting ranks of each communicator with an error: init (initialisation failed), async "
      "(an asynchronous NCCL error), aborted (the communicator was aborted).",
      [&](const RasCommunicator &comm, const Labels &labels) {
        std::size_t init = 0, async = 0, aborted = 0;
        for (const auto &rank : comm.ranks) {
          init += rank.init_state != 0 && rank.init_state != 7; // 7: still initialising
          async += rank.async_error != 0;
          aborted += rank.aborted;
        }
        sink.sample(labels, {{"kind", "init"}}, static_cast<double>(init));
        sink.sample(labels, {{"kind", "async"}}, static_cast<double>(async));
        sink.sample(labels, {{"kind", "aborted"}}, static_cast<double>(aborted));
      });
  per_communicator(
      "neutracer_nccl_ras_collectives",
      "Collectives launched per operation by the reporting ranks of each communicator: the "
      "fewest (bound=\"min\") and the most (bound=\"max\") of any rank. A gap that stays "
      "open: a rank is behind the others.",
      [&](const RasCommunicator &comm, const Labels &labels) {
        for (const auto &[op, range] : collective_spread(comm)) {
          sink.sample(labels, {{"op", op}, {"bound", "min"}}, static_cast<double>(range.first));
          sink.sample(labels, {{"op", op}, {"bound", "max"}}, static_cast<double>(range.second));
        }
      });
  std::size_t missing_shown = 0;
  per_communicator(
      "neutracer_nccl_ras_missing_rank",
      "1 for each rank that did not answer the last status, with where NCCL last knew it; "
      "dead=\"true\" once NCCL gave up on it.",
      [&](const RasCommunicator &comm, const Labels &labels) {
        for (const auto &rank : comm.missing) {
          if (missing_shown == kRasMaxMissingRanks) {
            ++dropped;
            continue;
          }
          ++missing_shown;
          sink.sample(labels,
                      {{"rank", std::to_string(rank.rank)},
                       {"host", rank.host},
                       {"pid", std::to_string(rank.pid)},
                       {"dead", rank.considered_dead ? "true" : "false"}},
                      1);
        }
      });
  sink.family("neutracer_nccl_ras_series_dropped",
              "Communicators and missing ranks of the last status left out of the series above "
              "(their bounds: 256 each).",
              MetricType::gauge);
  sink.sample({}, static_cast<double>(dropped));
}

void write_nccl_ras_event_metrics(const RasMonitorSnapshot &events, MetricSink &sink) {
  sink.family("neutracer_nccl_ras_events_up",
              "1 while NCCL's RAS event stream (MONITOR, NCCL 2.29 and later) is followed.",
              MetricType::gauge);
  sink.sample({}, events.state == RasMonitorState::following ? 1 : 0);
  sink.family("neutracer_nccl_ras_events_total",
              "Events NCCL's RAS service pushed, by kind (PEER_DEAD: a process of the job "
              "declared dead; PEER_NEW: one joined).",
              MetricType::counter);
  for (const auto &[kind, count] : events.events)
    sink.sample({}, {{"event", kind}}, static_cast<double>(count));
  sink.family("neutracer_nccl_ras_dead_process",
              "1 per process of this node's job that NCCL's RAS declared dead, where it ran.",
              MetricType::gauge);
  for (const auto &peer : events.dead)
    sink.sample({}, {{"host", peer.host}, {"pid", std::to_string(peer.pid)}}, 1);
}

} // namespace neutracer
