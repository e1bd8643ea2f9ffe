// SPDX-License-Identifier: Apache-2.0
#include "nccl/nccl_journal.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace neutracer {
namespace {

const ProcessId kFast{200, 7};
const ProcessId kSlow{201, 7};
const std::map<ProcessId, std::string> kComms{{kFast, "python3"}, {kSlow, "trainer"}};

std::string field(const JournalEntry &entry, const std::string &name) {
  const auto found = std::find_if(entry.fields.begin(), entry.fields.end(),
                                  [&](const auto &pair) { return pair.first == name; });
  return found == entry.fields.end() ? std::string("<absent>") : found->second;
}

TEST(NcclJournal, HangNamesTheWaitingRanksTheOperationTheSiteAndTheRanksBehind) {
  NcclHangFinding hang;
  hang.waiting = {{kFast, 0}};
  hang.behind = {{kSlow, 1}};
  hang.op = NT_NCCL_ALL_REDUCE;
  hang.collective = 42;
  hang.stalled_seconds = 31.4;
  const auto entry = nccl_hang_entry("c0ffee", hang, kComms, "step (train.py:12)");
  EXPECT_EQ(entry.message_id, kNcclHangMessageId);
  EXPECT_EQ(entry.priority, 3);
  EXPECT_EQ(entry.message, "nccl_hang in communicator c0ffee: rank 0 (python3, pid 200) waits in "
                           "AllReduce #42 at step (train.py:12) for rank 1 (trainer, pid 201); "
                           "no collective for 31 s");
  EXPECT_EQ(field(entry, "WAITING_PIDS"), "200");
  EXPECT_EQ(field(entry, "BEHIND_PIDS"), "201");
  EXPECT_EQ(field(entry, "NCCL_SITE"), "step (train.py:12)");
  EXPECT_EQ(field(entry, "STALLED_SECONDS"), "31.4");
}

TEST(NcclJournal, HangWithoutASiteLeavesTheSiteOut) {
  NcclHangFinding hang;
  hang.waiting = {{kFast, 0}, {kSlow, -1}};
  hang.op = NT_NCCL_ALL_REDUCE;
  const auto entry = nccl_hang_entry("c0ffee", hang, kComms, "");
  EXPECT_NE(entry.message.find("rank 0 (python3, pid 200), process trainer, pid 201 wait in"),
            std::string::npos)
      << entry.message;
  EXPECT_EQ(entry.message.find(" at "), std::string::npos) << entry.message;
  EXPECT_EQ(field(entry, "NCCL_SITE"), "<absent>");
}

// The median is the gap between the first rank's call and the straggler's: with hosts that run
// ahead of their GPUs it can exceed a step, so the message must not call it time spent waiting.
TEST(NcclJournal, StragglerGivesItsSharesAndItsMedianLagBehindTheFirstRank) {
  NcclStragglerFinding straggler{{kSlow, 1}, 0.994, 0.98, 0.0512, 1500};
  const auto entry = nccl_straggler_entry("c0ffee", straggler, kComms);
  EXPECT_EQ(entry.message_id, kNcclStragglerMessageId);
  EXPECT_EQ(entry.priority, 4);
  EXPECT_EQ(entry.message, "nccl_straggler in communicator c0ffee: rank 1 (trainer, pid 201) "
                           "arrives last at 98 % of its collectives; 99 % of the waiting is for "
                           "it; it calls a median 51.2 ms after the first rank, over 1500 "
                           "collectives");
  EXPECT_EQ(field(entry, "TARGET_PID"), "201");
  EXPECT_EQ(field(entry, "TARGET_COMM"), "trainer");
  EXPECT_EQ(field(entry, "NCCL_RANK"), "1");
  EXPECT_EQ(field(entry, "WAIT_SHARE"), "0.994");
  EXPECT_EQ(field(entry, "MEDIAN_WAIT_SECONDS"), "0.0512");
}

} // namespace
} // namespace neutracer
