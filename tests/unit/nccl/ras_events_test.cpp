// SPDX-License-Identifier: Apache-2.0
#include "nccl/ras_events.h"

#include <gtest/gtest.h>

namespace neutracer {
namespace {

TEST(RasEvents, APeerDeadLineNamesTheProcessAndItsNode) {
  // NCCL 2.29's text format; PEER_DEAD has no details, so the line ends with a space.
  const auto event = parse_ras_event(
      "[2026-11-30 12:00:07] PEER_DEAD: Process 1524345 on node 172.16.64.245 managing GPU 1 ");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, "PEER_DEAD");
  EXPECT_EQ(event->pid, 1524345);
  EXPECT_EQ(event->host, "172.16.64.245");
}

TEST(RasEvents, AnIPv6NodeAndSeveralGpusAndDetails) {
  const auto event = parse_ras_event("[2026-11-30 12:00:07] PEER_NEW: Process 42 on node "
                                     "fd00::7 managing GPUs 0,1 (NVML 1,0) joined");
  ASSERT_TRUE(event);
  EXPECT_EQ(event->event, "PEER_NEW");
  EXPECT_EQ(event->pid, 42);
  EXPECT_EQ(event->host, "fd00::7");
}

TEST(RasEvents, APeerNcclDoesNotKnowOrNoPeerIsAnEventWithoutAProcess) {
  const auto unknown = parse_ras_event("[2026-11-30 12:00:07] PEER_DEAD: 10.0.0.9<28028> ");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->event, "PEER_DEAD");
  EXPECT_EQ(unknown->pid, -1);
  EXPECT_EQ(unknown->host, "");
  const auto none = parse_ras_event("[2026-11-30 12:00:07] PEER_RETRY: (reconnecting)");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->event, "PEER_RETRY");
}

TEST(RasEvents, AnswersAndBrokenLinesAreNoEvents) {
  for (const char *line :
       {"OK", "ERROR: Unknown command MONITOR", "", "[2026-11-30 12:00:07]", "[x] peer_dead: y",
        "[x] PEER DEAD: Process 1 on node 1.2.3.4", "[x] : nothing",
        "[x] A_VERY_LONG_EVENT_NAME_THAT_GOES_ON_AND_ON_AND_ON_AND_ON_AND_ON_AND_ON_AND_ON: x"})
    EXPECT_FALSE(parse_ras_event(line)) << line;
}

TEST(RasEvents, ABadProcessLeavesTheEventWithoutOne) {
  for (const char *line : {"[x] PEER_DEAD: Process -4 on node 1.2.3.4",
                           "[x] PEER_DEAD: Process 99999999999999 on node 1.2.3.4",
                           "[x] PEER_DEAD: Process 4 on node <script>"}) {
    const auto event = parse_ras_event(line);
    ASSERT_TRUE(event) << line;
    EXPECT_EQ(event->pid, -1) << line;
    EXPECT_EQ(event->host, "") << line;
  }
}

} // namespace
} // namespace neutracer
