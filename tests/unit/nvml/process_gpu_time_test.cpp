// SPDX-License-Identifier: Apache-2.0
#include "nvml/process_gpu_time.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace neutracer {
namespace {

constexpr std::uint64_t kSecond = 1'000'000;
constexpr std::uint64_t kT0 = 1'795'804'127'000'000; // wall-clock microseconds
const ProcessId kTrainer{4242, 777};
const ProcessId kOther{4343, 888};

ProcessGpuTime::Traced traced_both() { return {{4242, kTrainer}, {4343, kOther}}; }

ProcessGpuTime make() { return ProcessGpuTime({2.0, 10.0}); }

// One query of `gpu` at `now`, as the sampler makes it.
void query(ProcessGpuTime &time, unsigned gpu, std::vector<NvmlProcessUtilization> samples,
           const ProcessGpuTime::Traced &traced, std::uint64_t now) {
  time.last_seen_us(gpu, now);
  time.add(gpu, samples, traced, now);
}

ProcessGpuTime::Busy busy(const ProcessGpuTime &time, const ProcessId &id, unsigned gpu) {
  const auto it = time.busy().find({id, gpu});
  return it == time.busy().end() ? ProcessGpuTime::Busy{-1, -1} : it->second;
}

TEST(ProcessGpuTime, AFirstSampleCountsForOneScanIntervalThenForTheTimeSinceTheLastQuery) {
  auto time = make();
  EXPECT_EQ(time.last_seen_us(0, kT0), 0u); // the driver's whole buffer
  time.add(0, std::vector<NvmlProcessUtilization>{{4242, kT0, 50, 20}}, traced_both(), kT0);
  EXPECT_DOUBLE_EQ(busy(time, kTrainer, 0).sm_seconds, 1.0); // 50 % of 2 s
  EXPECT_DOUBLE_EQ(busy(time, kTrainer, 0).memory_seconds, 0.4);
  EXPECT_EQ(time.last_seen_us(0, kT0 + kSecond), kT0);

  time.add(0, std::vector<NvmlProcessUtilization>{{4242, kT0 + 3 * kSecond, 100, 10}},
           traced_both(), kT0 + 3 * kSecond);
  EXPECT_DOUBLE_EQ(busy(time, kTrainer, 0).sm_seconds, 4.0); // + 100 % of 3 s
  EXPECT_DOUBLE_EQ(busy(time, kTrainer, 0).memory_seconds, 0.7);
}

TEST(ProcessGpuTime, EveryProcessOfAnAnswerSharesItsPeriod) {
  auto time = make();
  query(time, 0, {{4242, kT0, 50, 0}}, traced_both(), kT0);
  // As an H100 answered two processes taking turns: each stamped with the last driver period
  // that charged it, both averaged over the whole second since the previous answer's newest.
  query(time, 0, {{4242, kT0 + 400'000, 30, 0}, {4343, kT0 + kSecond, 41, 0}}, traced_both(),
        kT0 + kSecond);
  EXPECT_DOUBLE_EQ(busy(time, kTrainer, 0).sm_seconds, 1.0 + 0.30);
  EXPECT_DOUBLE_EQ(busy(time, kOther, 0).sm_seconds, 0.41);
  EXPECT_EQ(time.last_seen_us(0, kT0 + kSecond), kT0 + kSecond);
}

TEST(ProcessGpuTime, OfSeveralSamplesOfAProcessInOneAnswerTheNewestCounts) {
  auto time = make();
  query(time, 0, {{4242, kT0, 0, 0}}, traced_both(), kT0);
  query(time, 0,
        {{4242, kT0 + 2 * kSecond, 100, 0},
         {4242, kT0 + kSecond, 50, 0},
         {4242, kT0 + 4 * kSecond, 25, 0},
         {4242, kT0 + 3 * kSecond, 75, 0}},
        traced_both(), kT0 + 4 * kSecond);
  EXPECT_DOUBLE_EQ(busy(time, kTrainer, 0).sm_seconds, 1.0); // 25 % of 4 s
}

TEST(ProcessGpuTime, DuplicateAndStaleSamplesAddNothing) {
  auto time = make();
  query(time, 0, {{4242, kT0, 50, 50}}, traced_both(), kT0);
  const auto before = busy(time, kTrainer, 0);
  // The same stamp twice in one answer, and a stamp not after the query's lastSeenTimeStamp.
  query(time, 0, {{4242, kT0 + kSecond, 40, 0}, {4242, kT0 + kSecond, 40, 0}, {4242, kT0, 90, 0}},
        traced_both(), kT0 + kSecond);
  EXPECT_DOUBLE_EQ(busy(time, kTrainer, 0).sm_seconds, before.sm_seconds + 0.4);
  // The same answer again (a driver that ignores lastSeenTimeStamp).
  query(time, 0, {{4242, kT0 + kSecond, 40, 0}}, traced_both(), kT0 + 2 * kSecond);
  EXPECT_DOUBLE_EQ(busy(time, kTrainer, 0).sm_seconds, before.sm_seconds + 0.4);
}

TEST(ProcessGpuTime, CountersNeverDecreaseWhateverTheInput) {
  auto time = make();
  const std::vector<std::vector<NvmlProcessUtilization>> answers = {
      {{4242, kT0, 30, 30}},
      {{4242, kT0 - 5 * kSecond, 100, 100}},        // older than anything seen
      {{4242, 0, 100, 100}},                        // no stamp
      {{4242, kT0 + kSecond, 4'000'000'000u, 250}}, // shares beyond 100 %
      {{4242, UINT64_MAX, 100, 100}},               // from another clock
      {},                                           // NOT_FOUND: no news
      {{4242, kT0 + 2 * kSecond, 0, 0}},
  };
  ProcessGpuTime::Busy last{0, 0};
  std::uint64_t now = kT0;
  for (const auto &answer : answers) {
    query(time, 0, answer, traced_both(), now);
    const auto current = busy(time, kTrainer, 0);
    EXPECT_GE(current.sm_seconds, last.sm_seconds);
    EXPECT_GE(current.memory_seconds, last.memory_seconds);
    last = current;
    now += kSecond;
  }
  // 30 % of the first 2 s, then 100 % (capped) of the 1 s to kT0 + 1 s, then 0 %.
  EXPECT_DOUBLE_EQ(last.sm_seconds, 0.6 + 1.0);
  EXPECT_DOUBLE_EQ(last.memory_seconds, 0.6 + 1.0);
  EXPECT_EQ(time.last_seen_us(0, now), kT0 + 2 * kSecond); // the far-future stamp was not taken
}

TEST(ProcessGpuTime, ALongQuietGapIsCutAtTheLongestPeriod) {
  auto time = make();
  query(time, 0, {{4242, kT0, 100, 100}}, traced_both(), kT0);
  query(time, 0, {{4242, kT0 + 600 * kSecond, 100, 0}}, traced_both(), kT0 + 600 * kSecond);
  EXPECT_DOUBLE_EQ(busy(time, kTrainer, 0).sm_seconds, 2.0 + 10.0);
}

TEST(ProcessGpuTime, BusyTimeNeverExceedsTheTimeThatPassed) {
  auto time = make();
  std::uint64_t now = kT0;
  query(time, 0, {{4242, now, 100, 100}}, traced_both(), now);
  for (int scan = 0; scan < 50; ++scan) {
    now += 2 * kSecond + static_cast<std::uint64_t>(scan % 7) * 1000;
    query(time, 0, {{4242, now - 130'000, 100, 100}, {4343, now - 120'000, 100, 100}},
          traced_both(), now);
  }
  const double elapsed = static_cast<double>(now - kT0) / 1e6 + 2.0; // the first period
  EXPECT_LE(busy(time, kTrainer, 0).sm_seconds, elapsed);
  EXPECT_LE(busy(time, kOther, 0).sm_seconds, elapsed);
  EXPECT_GT(busy(time, kTrainer, 0).sm_seconds, elapsed - 2.5);
}

TEST(ProcessGpuTime, UntracedProcessesGetNothingButMoveTheDevicesStamp) {
  auto time = make();
  const ProcessGpuTime::Traced trainer_only{{4242, kTrainer}};
  query(time, 0, {{9999, kT0, 100, 100}}, trainer_only, kT0);
  EXPECT_TRUE(time.busy().empty());
  EXPECT_EQ(time.last_seen_us(0, kT0), kT0);
  // A process with no sample has no entry (and so no series), even when traced.
  query(time, 0, {{4242, kT0 + kSecond, 10, 0}}, traced_both(), kT0 + kSecond);
  EXPECT_EQ(time.busy().size(), 1u);
  EXPECT_FALSE(time.busy().contains({kOther, 0}));
}

TEST(ProcessGpuTime, DevicesAreIndependent) {
  auto time = make();
  query(time, 0, {{4242, kT0, 50, 0}}, traced_both(), kT0);
  query(time, 1, {{4242, kT0 + kSecond, 100, 0}}, traced_both(), kT0 + kSecond);
  EXPECT_DOUBLE_EQ(busy(time, kTrainer, 0).sm_seconds, 1.0);
  EXPECT_DOUBLE_EQ(busy(time, kTrainer, 1).sm_seconds, 2.0); // GPU 1's first query
  EXPECT_EQ(time.last_seen_us(0, kT0 + kSecond), kT0);
  EXPECT_EQ(time.last_seen_us(1, kT0 + kSecond), kT0 + kSecond);
}

TEST(ProcessGpuTime, ExitedProcessesAreForgottenAndAReusedPidStartsOver) {
  auto time = make();
  query(time, 0, {{4242, kT0, 100, 0}, {4343, kT0, 100, 0}}, traced_both(), kT0);
  ASSERT_EQ(time.busy().size(), 2u);
  // 4343 exited; 4242's PID now belongs to another process.
  const ProcessId reused{4242, 999};
  const ProcessGpuTime::Traced now_traced{{4242, reused}};
  time.retain(now_traced);
  EXPECT_TRUE(time.busy().empty());
  query(time, 0, {{4242, kT0 + kSecond, 50, 0}}, now_traced, kT0 + kSecond);
  EXPECT_DOUBLE_EQ(busy(time, reused, 0).sm_seconds, 0.5);
  EXPECT_FALSE(time.busy().contains({kTrainer, 0}));
}

TEST(ProcessGpuTime, AWallClockSteppedBackStartsTheDeviceOver) {
  auto time = make();
  query(time, 0, {{4242, kT0, 50, 0}}, traced_both(), kT0);
  // The clock went back an hour: NVML's new stamps are all before the device's newest.
  const std::uint64_t back = kT0 - 3600 * kSecond;
  EXPECT_EQ(time.last_seen_us(0, back), 0u);
  time.add(0, std::vector<NvmlProcessUtilization>{{4242, back, 50, 0}}, traced_both(), back);
  EXPECT_DOUBLE_EQ(busy(time, kTrainer, 0).sm_seconds, 2.0); // 1 s, then 1 s more
  EXPECT_EQ(time.last_seen_us(0, back + kSecond), back);
}

} // namespace
} // namespace neutracer
