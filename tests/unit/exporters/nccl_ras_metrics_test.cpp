// SPDX-License-Identifier: Apache-2.0
#include "exporters/nccl_ras_metrics.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "metric_lookup.h"

namespace neutracer {
namespace {

using test::family;
using test::value;

RasRank rank(int number, std::map<std::string, std::uint64_t> collectives) {
  RasRank out;
  out.rank = number;
  out.host = "10.0.0.1";
  out.pid = 100 + number;
  out.collectives = std::move(collectives);
  return out;
}

std::vector<MetricFamily> written(const RasSnapshot &snapshot) {
  FamilySink sink;
  write_nccl_ras_metrics(snapshot, sink);
  return sink.take();
}

// A 4-rank job: rank 1 is behind at all-reduce and never broadcast, rank 2 has an async error,
// rank 3 did not answer and NCCL gave up on it.
RasSnapshot job() {
  RasStatus status;
  status.collection_seconds = 0.25;
  RasCommunicator comm;
  comm.hash = "0xae94";
  comm.secondary_hash = "0x1f2e";
  comm.size = 4;
  comm.ranks = {rank(0, {{"AllReduce", 900}, {"Broadcast", 1}}), rank(1, {{"AllReduce", 850}}),
                rank(2, {{"AllReduce", 900}, {"Broadcast", 1}})};
  comm.ranks[2].async_error = 3;
  comm.missing = {RasMissingRank{3, "10.0.0.2", 555, true, true}};
  status.communicators = {comm};
  RasSnapshot snapshot;
  snapshot.status = std::make_shared<const RasStatus>(std::move(status));
  snapshot.last = RasPollResult::ok;
  snapshot.polls = {4, 2, 1};
  return snapshot;
}

TEST(NcclRasMetrics, PollsByResultAndUp) {
  auto families = written(job());
  EXPECT_EQ(value(families, "neutracer_nccl_ras_polls_total", {{"result", "ok"}}), 4);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_polls_total", {{"result", "no_answer"}}), 2);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_polls_total", {{"result", "bad_reply"}}), 1);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_up", {}), 1);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_collection_seconds", {}), 0.25);
}

TEST(NcclRasMetrics, RanksByStateErrorsAndTheCollectiveSpread) {
  const auto families = written(job());
  const Labels comm{{"comm_hash", "0xae94"}, {"comm_hash2", "0x1f2e"}};
  auto with = [&](Labels extra) {
    extra.insert(extra.begin(), comm.begin(), comm.end());
    return extra;
  };
  EXPECT_EQ(value(families, "neutracer_nccl_ras_ranks", with({{"state", "reporting"}})), 3);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_ranks", with({{"state", "missing"}})), 1);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_ranks", with({{"state", "dead"}})), 1);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_rank_errors", with({{"kind", "async"}})), 1);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_rank_errors", with({{"kind", "init"}})), 0);
  const auto collectives = "neutracer_nccl_ras_collectives";
  EXPECT_EQ(value(families, collectives, with({{"op", "AllReduce"}, {"bound", "min"}})), 850);
  EXPECT_EQ(value(families, collectives, with({{"op", "AllReduce"}, {"bound", "max"}})), 900);
  // Rank 1 never broadcast: 0 for it.
  EXPECT_EQ(value(families, collectives, with({{"op", "Broadcast"}, {"bound", "min"}})), 0);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_missing_rank",
                  with({{"rank", "3"}, {"host", "10.0.0.2"}, {"pid", "555"}, {"dead", "true"}})),
            1);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_series_dropped", {}), 0);
}

TEST(NcclRasMetrics, WithoutAStatusTheJobsFamiliesAreEmpty) {
  RasSnapshot snapshot;
  snapshot.last = RasPollResult::no_answer;
  snapshot.polls = {0, 3, 0};
  const auto families = written(snapshot);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_up", {}), 0);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_polls_total", {{"result", "no_answer"}}), 3);
  for (const auto &f : families) {
    if (!f.name.starts_with("neutracer_nccl_ras_poll") && f.name != "neutracer_nccl_ras_up" &&
        f.name != "neutracer_nccl_ras_series_dropped") {
      EXPECT_TRUE(f.samples.empty()) << f.name;
    }
  }
  EXPECT_EQ(family(families, "neutracer_nccl_ras_ranks").type, MetricType::gauge);
}

TEST(NcclRasMetrics, AHugeJobIsBounded) {
  RasStatus status;
  for (std::size_t i = 0; i < kRasMaxCommunicators + 10; ++i) {
    RasCommunicator comm;
    comm.hash = "0x" + std::to_string(i);
    comm.ranks = {rank(0, {{"AllReduce", 1}})};
    for (int missing = 0; missing < 2; ++missing)
      comm.missing.push_back(RasMissingRank{missing + 1, "10.0.0.9", missing, true, false});
    status.communicators.push_back(comm);
  }
  RasSnapshot snapshot;
  snapshot.status = std::make_shared<const RasStatus>(std::move(status));
  snapshot.last = RasPollResult::ok;
  const auto families = written(snapshot);
  EXPECT_EQ(family(families, "neutracer_nccl_ras_ranks").samples.size(), 3 * kRasMaxCommunicators);
  EXPECT_EQ(family(families, "neutracer_nccl_ras_missing_rank").samples.size(),
            kRasMaxMissingRanks);
  // 10 communicators, and the missing ranks of the shown ones past the bound.
  EXPECT_EQ(value(families, "neutracer_nccl_ras_series_dropped", {}),
            10 + 2 * kRasMaxCommunicators - kRasMaxMissingRanks);
}

TEST(NcclRasMetrics, EventsFollowedByKindAndTheDeadProcesses) {
  RasMonitorSnapshot events;
  events.state = RasMonitorState::following;
  events.events = {{"PEER_DEAD", 2}, {"PEER_NEW", 5}};
  events.dead = {{"10.0.0.2", 42}, {"10.0.0.3", 43}};
  FamilySink sink;
  write_nccl_ras_event_metrics(events, sink);
  auto families = sink.take();
  EXPECT_EQ(value(families, "neutracer_nccl_ras_events_up", {}), 1);
  EXPECT_EQ(value(families, "neutracer_nccl_ras_events_total", {{"event", "PEER_DEAD"}}), 2);
  EXPECT_EQ(family(families, "neutracer_nccl_ras_events_total").type, MetricType::counter);
  EXPECT_EQ(
      value(families, "neutracer_nccl_ras_dead_process", {{"host", "10.0.0.3"}, {"pid", "43"}}), 1);
  events.state = RasMonitorState::unsupported;
  events.dead.clear();
  FamilySink again;
  write_nccl_ras_event_metrics(events, again);
  families = again.take();
  EXPECT_EQ(value(families, "neutracer_nccl_ras_events_up", {}), 0);
  EXPECT_TRUE(family(families, "neutracer_nccl_ras_dead_process").samples.empty());
}

} // namespace
} // namespace neutracer
