// SPDX-License-Identifier: Apache-2.0
#include "nccl/ras_status.h"

#include <gtest/gtest.h>

namespace neutracer {
namespace {

// NCCL 2.28.9's reply to "SET FORMAT json" then "STATUS" for a two-rank job whose rank 1 stopped
// answering: its missing rank lacks the comma after "nvml_dev", as 2.28.7-2.28.9 write it.
constexpr std::string_view kStoppedRank = R"(OK
{
  "nccl_version": "2.28.9",
  "cuda_runtime_version": 13000,
  "cuda_driver_version": 13000,
  "timestamp": "2026-11-29 12:00:00",
  "communicators_count": 2,
  "communicators": [
    {
      "hash": "0xae94423cfbb2ef4a",
      "secondary_hash": "0x1f2e:0x3d4c",
      "size": 2,
      "ranks_count": 1,
      "missing_ranks_count": 1,
      "ranks": [
        {
          "rank": 0, "host": "10.0.0.1", "pid": 1234, "cuda_dev": 0, "nvml_dev": 0,
          "status": {"init_state": 0, "async_error": 0, "finalize_called": false,
                     "destroy_flag": false, "abort_flag": false},
          "collective_counts": {"Broadcast": 1, "Reduce": 0, "AllGather": 0,
                                "ReduceScatter": 0, "AllReduce": 4242}
        }
      ],
      "missing_ranks": [
        {
          "rank": 1, "host": "10.0.0.1", "pid": 1235, "cuda_dev": 1, "nvml_dev": 1
          "status": {"unresponsive": true, "considered_dead": false}
        }
      ]
    },
    {
      "hash": "0x0", "secondary_hash": "0x0:0x0", "size": 0, "ranks_count": 0,
      "missing_ranks_count": 0, "ranks": [], "missing_ranks": []
    }
  ],
  "ras": {"collection_time_sec": 2.051, "timeouts_count": 1}
}
)";

TEST(RasStatus, ReadsRanksCountsAndMissingRanksMendingNcclsMissingComma) {
  const auto parsed = parse_ras_status(kStoppedRank);
  ASSERT_TRUE(parsed.status) << parsed.error;
  const auto &status = *parsed.status;
  EXPECT_EQ(status.nccl_version, "2.28.9");
  EXPECT_DOUBLE_EQ(status.collection_seconds, 2.051);
  EXPECT_EQ(status.timeouts, 1u);
  ASSERT_EQ(status.communicators.size(), 1u) << "the zeroed entry is left out";
  const auto &comm = status.communicators[0];
  EXPECT_EQ(comm.hash, "0xae94423cfbb2ef4a");
  EXPECT_EQ(comm.size, 2);
  ASSERT_EQ(comm.ranks.size(), 1u);
  EXPECT_EQ(comm.ranks[0].pid, 1234);
  EXPECT_EQ(comm.ranks[0].host, "10.0.0.1");
  EXPECT_EQ(comm.ranks[0].collectives.at("AllReduce"), 4242u);
  EXPECT_EQ(comm.ranks[0].collectives.at("Broadcast"), 1u);
  ASSERT_EQ(comm.missing.size(), 1u);
  EXPECT_EQ(comm.missing[0].rank, 1);
  EXPECT_EQ(comm.missing[0].pid, 1235);
  EXPECT_TRUE(comm.missing[0].unresponsive);
  EXPECT_FALSE(comm.missing[0].considered_dead);
}

TEST(RasStatus, AnErrorAndAnUnknownPeerAreKept) {
  const auto parsed = parse_ras_status(R"({"nccl_version": "2.29.2", "communicators": [
      {"hash": "0x1", "size": 1, "ranks": [{"rank": 0, "host": "unknown", "pid": -1,
       "status": {"init_state": 0, "async_error": 6, "abort_flag": true}}]}]})");
  ASSERT_TRUE(parsed.status) << parsed.error;
  const auto &rank = parsed.status->communicators.at(0).ranks.at(0);
  EXPECT_EQ(rank.async_error, 6);
  EXPECT_TRUE(rank.aborted);
  EXPECT_EQ(rank.pid, -1);
  EXPECT_TRUE(rank.collectives.empty());
}

TEST(RasStatus, WhatIsNoStatusSaysWhy) {
  EXPECT_EQ(parse_ras_status("ERROR: Unknown command SET\n").error,
            "no JSON document in the reply");
  EXPECT_EQ(parse_ras_status("{\"communicators\": [").error, "the reply is not a JSON object");
  EXPECT_EQ(parse_ras_status("{\"nccl_version\": \"2.28.7\"}").error, "no communicators array");
  // Wrong types are read as absent, not thrown.
  const auto odd = parse_ras_status(
      R"({"communicators": [{"hash": 7, "size": "two"}, {"hash": "0x2", "size": 2,
          "ranks": [{"rank": "x", "collective_counts": {"AllReduce": -1}}]}]})");
  ASSERT_TRUE(odd.status);
  ASSERT_EQ(odd.status->communicators.size(), 1u);
  EXPECT_EQ(odd.status->communicators[0].ranks.at(0).rank, -1);
  EXPECT_TRUE(odd.status->communicators[0].ranks.at(0).collectives.empty());
}

} // namespace
} // namespace neutracer
