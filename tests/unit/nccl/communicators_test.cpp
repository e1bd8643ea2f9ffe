// SPDX-License-Identifier: Apache-2.0
#include "nccl/communicators.h"

#include <gtest/gtest.h>

#include "nccl_event.h"

namespace neutracer {
namespace {

using test::nccl_call;
using test::nccl_init;

constexpr std::uint32_t kFloat32 = 7, kBfloat16 = 9;
const ProcessId kRank0{100, 1}, kRank1{101, 1};

TEST(NcclCommunicators, CountsCallsAndBytesPerOperation) {
  NcclCommunicators all;
  all.apply(kRank0, nccl_init(0xc0, 0x1234, 0, 2));
  all.apply(kRank0, nccl_call(NT_NCCL_ALL_REDUCE, 0xc0, 1000, kFloat32, 10));
  all.apply(kRank0, nccl_call(NT_NCCL_ALL_REDUCE, 0xc0, 10, kBfloat16, 20));
  all.apply(kRank0, nccl_call(NT_NCCL_SEND, 0xc0, 5, kFloat32, 30));
  all.apply(kRank0, nccl_call(NT_NCCL_ALL_GATHER, 0xc0, 8, kFloat32, 40, /*result=*/3));
  const auto &comm = all.processes().at(kRank0).at(0xc0);
  EXPECT_EQ(comm.rank, 0);
  EXPECT_EQ(comm.nranks, 2);
  EXPECT_TRUE(comm.joinable);
  EXPECT_EQ(comm.id.size(), 8u);
  EXPECT_EQ(comm.calls[nccl_transfer_index(NT_NCCL_ALL_REDUCE)], 2u);
  EXPECT_EQ(comm.bytes[nccl_transfer_index(NT_NCCL_ALL_REDUCE)], 4000u + 20u);
  EXPECT_EQ(comm.calls[nccl_transfer_index(NT_NCCL_SEND)], 1u);
  EXPECT_EQ(comm.failed[nccl_transfer_index(NT_NCCL_ALL_GATHER)], 1u);
  EXPECT_EQ(comm.collectives, 3u) << "point-to-point calls are not collectives";
  EXPECT_EQ(comm.last_op, NT_NCCL_ALL_GATHER);
  EXPECT_EQ(comm.last_call_ns, 40u);
  EXPECT_NEAR(comm.enqueue_seconds, 4 * 20e-6, 1e-12);
}

TEST(NcclCommunicators, RanksOfOneUniqueIdShareTheirIdAndJoin) {
  NcclCommunicators all;
  all.apply(kRank0, nccl_init(0xa0, 0x55aa, 0, 2));
  all.apply(kRank1, nccl_init(0xb0, 0x55aa, 1, 2)); // its own handle, the same unique id
  all.apply(kRank1, nccl_init(0xb8, 0x77bb, 0, 1)); // another communicator
  const auto joined = joined_communicators(all);
  ASSERT_EQ(joined.size(), 2u);
  const auto &pair = joined.at(all.processes().at(kRank0).at(0xa0).id);
  ASSERT_EQ(pair.size(), 2u);
  EXPECT_EQ(pair[0].process, kRank0);
  EXPECT_EQ(pair[1].communicator->rank, 1);
  EXPECT_NE(all.processes().at(kRank1).at(0xb8).id, all.processes().at(kRank1).at(0xb0).id);
}

TEST(NcclCommunicators, ACommunicatorWhoseInitWasNotSeenJoinsNothing) {
  NcclCommunicators all;
  all.apply(kRank0, nccl_call(NT_NCCL_ALL_REDUCE, 0xdead, 1, kFloat32, 10));
  const auto &comm = all.processes().at(kRank0).at(0xdead);
  EXPECT_FALSE(comm.joinable);
  EXPECT_EQ(comm.id, "hdead");
  EXPECT_TRUE(joined_communicators(all).empty());
}

TEST(NcclCommunicators, SplitsOfOneParentAndColorJoin) {
  NcclCommunicators all;
  all.apply(kRank0, nccl_init(0xa0, 0x55aa, 0, 2));
  all.apply(kRank1, nccl_init(0xb0, 0x55aa, 1, 2));
  auto split = [](std::uint64_t parent, std::uint64_t child, int color) {
    nt_nccl_event event{};
    event.kind = NT_EVENT_NCCL;
    event.op = NT_NCCL_COMM_SPLIT;
    event.call.comm = child;
    event.call.comm_key = parent;
    event.call.rank = color;
    return event;
  };
  all.apply(kRank0, split(0xa0, 0xa1, 3));
  all.apply(kRank1, split(0xb0, 0xb1, 3));
  all.apply(kRank1, split(0xb0, 0xb2, 4));
  const auto &a = all.processes().at(kRank0).at(0xa1);
  EXPECT_TRUE(a.joinable);
  EXPECT_EQ(a.id, all.processes().at(kRank1).at(0xb1).id);
  EXPECT_NE(a.id, all.processes().at(kRank1).at(0xb2).id) << "another color";
  EXPECT_NE(a.id, all.processes().at(kRank0).at(0xa0).id) << "not the parent";
  EXPECT_EQ(a.rank, -1) << "NCCL decides a split's rank";

  // A second group of the same ranks (PyTorch's new_group reuses the color): a communicator of
  // its own, again the same in both ranks.
  all.apply(kRank0, split(0xa0, 0xa3, 3));
  all.apply(kRank1, split(0xb0, 0xb3, 3));
  const auto &second = all.processes().at(kRank0).at(0xa3);
  EXPECT_NE(second.id, a.id);
  EXPECT_EQ(second.id, all.processes().at(kRank1).at(0xb3).id);
  EXPECT_EQ(joined_communicators(all).at(a.id).size(), 2u) << "one rank per process";
}

TEST(NcclCommunicators, InProgressIsNoFailure) {
  NcclCommunicators all;
  all.apply(kRank0, nccl_init(0xc0, 0x1234, 0, 2));
  all.apply(kRank0, nccl_call(NT_NCCL_ALL_REDUCE, 0xc0, 1, kFloat32, 10, /*ncclInProgress=*/7));
  const auto &comm = all.processes().at(kRank0).at(0xc0);
  EXPECT_EQ(comm.calls[nccl_transfer_index(NT_NCCL_ALL_REDUCE)], 1u);
  EXPECT_EQ(comm.failed[nccl_transfer_index(NT_NCCL_ALL_REDUCE)], 0u);
}

TEST(NcclCommunicators, DestroyForgetsAndFailedInitsMakeNothing) {
  NcclCommunicators all;
  auto failed = nccl_init(0xa0, 0x1, 0, 2);
  failed.result = 5; // ncclInvalidUsage
  all.apply(kRank0, failed);
  EXPECT_TRUE(all.processes().at(kRank0).empty());
  auto nonblocking = nccl_init(0xa8, 0x2, 0, 2);
  nonblocking.result = 7; // ncclInProgress: made, still connecting
  all.apply(kRank0, nonblocking);
  EXPECT_TRUE(all.processes().at(kRank0).at(0xa8).joinable);
  nt_nccl_event destroy{};
  destroy.kind = NT_EVENT_NCCL;
  destroy.op = NT_NCCL_COMM_DESTROY;
  destroy.call.comm = 0xa8;
  all.apply(kRank0, destroy);
  EXPECT_TRUE(all.processes().at(kRank0).empty());
  all.forget(kRank0);
  EXPECT_TRUE(all.processes().empty());
}

TEST(NcclCommunicators, BoundedPerProcessAndInArrivals) {
  NcclCommunicators all({.max_communicators_per_process = 2, .arrivals_kept = 3});
  for (std::uint64_t handle = 1; handle <= 3; ++handle)
    all.apply(kRank0, nccl_call(NT_NCCL_ALL_REDUCE, handle, 1, kFloat32, handle));
  EXPECT_EQ(all.processes().at(kRank0).size(), 2u);
  EXPECT_EQ(all.untracked_calls(), 1u);
  for (std::uint64_t t = 10; t < 20; ++t)
    all.apply(kRank0, nccl_call(NT_NCCL_ALL_REDUCE, 1, 1, kFloat32, t));
  const auto &comm = all.processes().at(kRank0).at(1);
  EXPECT_EQ(comm.collectives, 11u);
  EXPECT_EQ(comm.arrivals, (std::deque<std::uint64_t>{17, 18, 19}));
}

TEST(NcclCommunicators, TheKernelsNumbersLeaveAGapForLostEventsAndPlaceLateOnes) {
  NcclCommunicators all;
  const auto numbered = [](std::uint64_t number, std::uint64_t enter_ns) {
    auto event = nccl_call(NT_NCCL_ALL_REDUCE, 0xc0, 1, kFloat32, enter_ns);
    event.call.sequence = number;
    return event;
  };
  all.apply(kRank0, numbered(1, 10));
  all.apply(kRank0, numbered(2, 20));
  all.apply(kRank0, numbered(5, 50)); // 3 and 4 lost
  const auto &comm = all.processes().at(kRank0).at(0xc0);
  EXPECT_EQ(comm.collectives, 5u);
  EXPECT_EQ(comm.missed_collectives, 2u);
  EXPECT_EQ(comm.arrivals,
            (std::deque<std::uint64_t>{10, 20, kUnknownArrival, kUnknownArrival, 50}));
  all.apply(kRank0, numbered(4, 40)); // late, from another thread
  EXPECT_EQ(comm.missed_collectives, 1u) << "number 4 was not lost after all";
  EXPECT_EQ(comm.collectives, 5u);
  EXPECT_EQ(comm.arrivals, (std::deque<std::uint64_t>{10, 20, kUnknownArrival, 40, 50}));
  EXPECT_EQ(comm.last_call_ns, 50u) << "the latest collective is still number 5";
}

} // namespace
} // namespace neutracer
