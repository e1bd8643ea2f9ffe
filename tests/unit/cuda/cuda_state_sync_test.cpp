// SPDX-License-Identifier: Apache-2.0
// CudaState: Synchronisation waits: totals, histogram buckets, waits in progress.
#include "cuda/cuda_state.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cuda/cuda_state_events.h"

namespace neutracer {
namespace {

using namespace cuda_state_test;

// ---------------------------------------------------------------------------------------------
// Synchronisation

std::size_t expected_bucket(double seconds) {
  for (std::size_t i = 0; i < kSyncWaitBuckets.size(); ++i)
    if (seconds <= kSyncWaitBuckets[i])
      return i;
  return kSyncWaitBuckets.size();
}

TEST(CudaState, SyncWaitsAndHistogram) {
  CudaState state(settings());
  const std::uint64_t t0 = 50'000'000'000ull;
  state.apply(sync(NT_API_STREAM_SYNCHRONIZE, t0, t0 + 1'500'000'000));  // 1.5 s
  state.apply(sync(NT_API_STREAM_SYNCHRONIZE, t0, t0 + 1'000'000));      // exactly 1 ms
  state.apply(sync(NT_API_STREAM_SYNCHRONIZE, t0, t0 + 7'000));          // 7 us
  state.apply(sync(NT_API_STREAM_SYNCHRONIZE, t0, t0 + 61'000'000'000)); // above the last bound
  state.apply(sync(NT_API_CTX_SYNCHRONIZE, t0, t0 + 200'000'000));       // 0.2 s
  state.apply(sync(NT_API_EVENT_SYNCHRONIZE, t0 + 5, t0));               // clock went back: 0

  const auto &syncs = state_of(state).syncs;
  ASSERT_EQ(syncs.size(), 3u);
  const auto &stream = syncs.at(NT_API_STREAM_SYNCHRONIZE);
  EXPECT_EQ(stream.waits, 4u);
  EXPECT_NEAR(stream.wait_seconds, 1.5 + 0.001 + 7e-6 + 61, 1e-9);
  std::array<std::uint64_t, kSyncWaitBuckets.size()> expected{};
  for (const double s : {1.5, 0.001, 7e-6})
    ++expected[expected_bucket(s)];
  EXPECT_EQ(stream.buckets, expected);
  EXPECT_EQ(stream.buckets[11], 1u); // (1, 5]
  EXPECT_EQ(stream.buckets[4], 1u);  // (5e-4, 1e-3]: the bound itself is included
  EXPECT_EQ(stream.buckets[0], 1u);  // <= 1e-5
  std::uint64_t in_buckets = 0;
  for (const auto b : stream.buckets)
    in_buckets += b;
  EXPECT_EQ(in_buckets, 3u); // the 61 s wait is only in the count

  const auto &ctx = syncs.at(NT_API_CTX_SYNCHRONIZE);
  EXPECT_EQ(ctx.waits, 1u);
  EXPECT_NEAR(ctx.wait_seconds, 0.2, 1e-12);
  EXPECT_EQ(ctx.buckets[9], 1u); // (0.1, 0.5]

  const auto &event = syncs.at(NT_API_EVENT_SYNCHRONIZE);
  EXPECT_EQ(event.waits, 1u);
  EXPECT_EQ(event.wait_seconds, 0.0);
  EXPECT_EQ(event.buckets[0], 1u);
}

TEST(CudaState, EveryBucketBoundLandsInItsOwnBucket) {
  CudaState state(settings());
  for (std::size_t i = 0; i < kSyncWaitBuckets.size(); ++i) {
    const auto ns = static_cast<std::uint64_t>(std::llround(kSyncWaitBuckets[i] * 1e9));
    state.apply(sync(NT_API_CTX_SYNCHRONIZE, 1000, 1000 + ns));
    // Just above the bound goes to the next bucket (or only the count).
    state.apply(sync(NT_API_EVENT_SYNCHRONIZE, 1000, 1000 + ns + 1000));
  }
  const auto &at = state_of(state).syncs.at(NT_API_CTX_SYNCHRONIZE);
  const auto &above = state_of(state).syncs.at(NT_API_EVENT_SYNCHRONIZE);
  for (std::size_t i = 0; i < kSyncWaitBuckets.size(); ++i) {
    EXPECT_EQ(at.buckets[i], 1u) << "bound " << kSyncWaitBuckets[i];
    EXPECT_EQ(above.buckets[i], i == 0 ? 0u : 1u) << "bound " << kSyncWaitBuckets[i];
  }
  EXPECT_EQ(above.waits, kSyncWaitBuckets.size());
}

TEST(CudaState, FailedSyncStillWaited) {
  CudaState state(settings());
  state.apply(sync(NT_API_EVENT_SYNCHRONIZE, 0, 2'000'000, 400));
  const auto &event = state_of(state).syncs.at(NT_API_EVENT_SYNCHRONIZE);
  EXPECT_EQ(event.waits, 1u);
  EXPECT_NEAR(event.wait_seconds, 0.002, 1e-12);
  EXPECT_EQ(state_of(state).errors.at({NT_API_EVENT_SYNCHRONIZE, 400}), 1u);
}

TEST(CudaState, InProgressSyncAge) {
  CudaState state(settings());
  const std::uint64_t now = 10'000'000'000ull;
  InflightCall a{kPid, kPid + 1, kStartTicks * kNsPerTick, NT_API_STREAM_SYNCHRONIZE,
                 now - 2'500'000'000};
  InflightCall b{kPid, kPid + 2, kStartTicks * kNsPerTick, NT_API_STREAM_SYNCHRONIZE,
                 now - 500'000'000};
  InflightCall c{kPid, kPid + 3, kStartTicks * kNsPerTick, NT_API_CTX_SYNCHRONIZE,
                 now - 100'000'000};
  InflightCall not_sync{kPid, kPid + 4, kStartTicks * kNsPerTick, NT_API_MEM_ALLOC, 0};
  InflightCall future{kPid, kPid + 5, kStartTicks * kNsPerTick, NT_API_EVENT_SYNCHRONIZE,
                      now + 1000};
  state.set_inflight_calls({a, b, c, not_sync, future}, now);
  const auto &syncs = state_of(state).syncs;
  EXPECT_NEAR(syncs.at(NT_API_STREAM_SYNCHRONIZE).in_progress_seconds, 2.5, 1e-9);
  EXPECT_NEAR(syncs.at(NT_API_CTX_SYNCHRONIZE).in_progress_seconds, 0.1, 1e-9);
  EXPECT_EQ(syncs.at(NT_API_EVENT_SYNCHRONIZE).in_progress_seconds, 0.0);
  // In-progress calls are not completed waits.
  EXPECT_EQ(syncs.at(NT_API_STREAM_SYNCHRONIZE).waits, 0u);

  // Later: only c still waits; the stream sync finished.
  state.set_inflight_calls({c}, now + 1'000'000'000);
  EXPECT_EQ(syncs.at(NT_API_STREAM_SYNCHRONIZE).in_progress_seconds, 0.0);
  EXPECT_NEAR(syncs.at(NT_API_CTX_SYNCHRONIZE).in_progress_seconds, 1.1, 1e-9);

  state.set_inflight_calls({}, now + 2'000'000'000);
  for (const auto &[api, counters] : syncs)
    EXPECT_EQ(counters.in_progress_seconds, 0.0) << api_name(api);
}

TEST(CudaState, NonSyncInflightCallsCountAsLongestCallButNotAsSyncWaits) {
  CudaState state(settings());
  state.set_inflight_calls(
      {{kPid, kPid, kStartTicks * kNsPerTick, NT_API_MEMCPY_DTOH, 0},
       {kPid, kPid + 1, kStartTicks * kNsPerTick, NT_API_MEM_ALLOC, 2'000'000'000}},
      3'000'000'000);
  const auto &process = state.processes().at({kPid, kStartTicks});
  EXPECT_TRUE(process.syncs.empty());
  EXPECT_DOUBLE_EQ(process.longest_call_seconds, 3.0);
  EXPECT_EQ(process.longest_call_api, NT_API_MEMCPY_DTOH);
  // The next read without calls clears it.
  state.set_inflight_calls({}, 4'000'000'000);
  EXPECT_DOUBLE_EQ(state.processes().at({kPid, kStartTicks}).longest_call_seconds, 0.0);
}

} // namespace
} // namespace neutracer
