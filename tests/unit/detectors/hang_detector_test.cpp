// SPDX-License-Identifier: Apache-2.0
#include "detectors/hang_detector.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>

namespace neutracer {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;
constexpr double kClockStart = 777.5;
constexpr double kScanSeconds = 2;
constexpr int kStreamSynchronize = 11; // any API id: the detector only carries it

std::uint64_t ns(double seconds) {
  return static_cast<std::uint64_t>(std::llround((kClockStart + seconds) * 1e9));
}

// A process scanned every two seconds on a fake clock.
class ScannedProcess {
public:
  explicit ScannedProcess(HangSettings settings = {}) : detector_(settings) {}

  // Scans for `seconds` while the process launches and uses CPU at the given rates; returns the
  // time of the first suspected verdict in that span.
  std::optional<double> run(double seconds, std::uint64_t launches_per_second, double cpu_cores,
                            double longest_call_seconds = 0) {
    std::optional<double> first;
    for (int i = 0; i < std::lround(seconds / kScanSeconds); ++i) {
      t_ += kScanSeconds;
      launches_ += launches_per_second * static_cast<std::uint64_t>(kScanSeconds);
      cpu_seconds_ += cpu_cores * kScanSeconds;
      last_ = scan(longest_call_seconds);
      if (last_.suspected && !first)
        first = t_;
    }
    return first;
  }

  HangVerdict scan(double longest_call_seconds) {
    return detector_.evaluate(HangSample{ns(t_), longest_call_seconds, kStreamSynchronize,
                                         launches_, gpu_bytes, cpu_seconds_});
  }

  const HangVerdict &last() const { return last_; }
  double now() const { return t_; }
  std::uint64_t gpu_bytes = 8 * kGiB;

private:
  HangDetector detector_;
  double t_ = 0;
  std::uint64_t launches_ = 0;
  double cpu_seconds_ = 0;
  HangVerdict last_;
};

TEST(HangDetector, StuckSyncFiresAtThresholdAndClearsWhenItReturns) {
  HangDetector detector;
  HangSample sample{ns(0), 0, kStreamSynchronize, 100, 8 * kGiB, 1};
  EXPECT_FALSE(detector.evaluate(sample).suspected);

  sample.now_ns = ns(59.9);
  sample.longest_call_seconds = 59.9;
  EXPECT_FALSE(detector.evaluate(sample).suspected);

  sample.now_ns = ns(60);
  sample.longest_call_seconds = 60;
  const auto stuck = detector.evaluate(sample);
  EXPECT_TRUE(stuck.suspected);
  EXPECT_EQ(stuck.reason, HangReason::call_in_progress);
  EXPECT_DOUBLE_EQ(stuck.stalled_seconds, 60);
  EXPECT_EQ(stuck.call_api, kStreamSynchronize);

  sample.now_ns = ns(62);
  sample.longest_call_seconds = 0; // the call returned
  const auto returned = detector.evaluate(sample);
  EXPECT_FALSE(returned.suspected);
  EXPECT_EQ(returned.reason, HangReason::none);
  EXPECT_EQ(returned.call_api, 0);
}

TEST(HangDetector, LongFiniteSyncsBelowThresholdStaySilent) {
  ScannedProcess process;
  // Each 58 s sync returns; the process launches the next batch and waits again.
  for (int cycle = 0; cycle < 30; ++cycle) {
    for (double call = 0; call < 58; call += kScanSeconds)
      EXPECT_EQ(process.run(kScanSeconds, 0, 1.0, call), std::nullopt);
    EXPECT_EQ(process.run(kScanSeconds, 5000, 1.0), std::nullopt);
  }
  EXPECT_EQ(process.last().reason, HangReason::none);
}

TEST(HangDetector, IdleServerHoldingMemoryStaysSilent) {
  ScannedProcess process;
  EXPECT_EQ(process.run(60, 1000, 0.5), std::nullopt);
  // No requests for half an hour: memory held, no launches, the process sleeps.
  EXPECT_EQ(process.run(30 * 60, 0, 0.02), std::nullopt);
  EXPECT_EQ(process.last().reason, HangReason::none);
}

TEST(HangDetector, BusyStallFires) {
  ScannedProcess process;
  ASSERT_EQ(process.run(100, 1000, 0.3), std::nullopt);
  // The GPU stopped finishing work: the driver spins, nothing new is launched.
  const auto fired = process.run(300, 0, 1.0);

  ASSERT_TRUE(fired.has_value());
  EXPECT_DOUBLE_EQ(*fired, 100 + 120);
  EXPECT_TRUE(process.last().suspected);
  EXPECT_EQ(process.last().reason, HangReason::launches_stalled);
  EXPECT_NEAR(process.last().stalled_seconds, 300, 1e-6);
  EXPECT_EQ(process.last().call_api, 0);
}

TEST(HangDetector, LaunchesResumingClears) {
  ScannedProcess process;
  ASSERT_EQ(process.run(100, 1000, 0.3), std::nullopt);
  ASSERT_TRUE(process.run(200, 0, 1.0).has_value());

  EXPECT_EQ(process.run(kScanSeconds, 10, 1.0), std::nullopt);
  EXPECT_FALSE(process.last().suspected);
  EXPECT_EQ(process.last().reason, HangReason::none);
}

TEST(HangDetector, SpinAfterALongIdleFiresWithinOneStallSpan) {
  ScannedProcess process;
  ASSERT_EQ(process.run(60, 1000, 0.5), std::nullopt);
  ASSERT_EQ(process.run(60 * 60, 0, 0.01), std::nullopt);
  const double spin_start = process.now();
  // CPU is judged over the last 120 s, not the whole hour since the last launch.
  const auto fired = process.run(300, 0, 1.0);

  ASSERT_TRUE(fired.has_value());
  EXPECT_GT(*fired, spin_start + 0.8 * 120 - kScanSeconds);
  EXPECT_LE(*fired, spin_start + 120);
  EXPECT_EQ(process.last().reason, HangReason::launches_stalled);
  EXPECT_GT(process.last().stalled_seconds, 60 * 60);
}

TEST(HangDetector, NeverSeenLaunchingStaysSilent) {
  // Launched before the daemon attached and not since: no evidence it ever ran here.
  HangDetector detector;
  double cpu = 0;
  for (int i = 0; i <= 300; ++i) {
    cpu += kScanSeconds;
    EXPECT_FALSE(detector.evaluate({ns(i * kScanSeconds), 0, 0, 5000, 8 * kGiB, cpu}).suspected);
  }
}

TEST(HangDetector, StallWithoutGpuMemoryStaysSilent) {
  ScannedProcess process;
  ASSERT_EQ(process.run(100, 1000, 0.3), std::nullopt);
  process.gpu_bytes = 0; // released everything: a CPU phase, not a GPU hang
  EXPECT_EQ(process.run(600, 0, 1.0), std::nullopt);
}

TEST(HangDetector, BusyProcessThatKeepsLaunchingStaysSilent) {
  ScannedProcess process;
  EXPECT_EQ(process.run(30 * 60, 2000, 1.0), std::nullopt);
}

TEST(HangDetector, CallInProgressTakesPrecedence) {
  ScannedProcess process;
  ASSERT_EQ(process.run(100, 1000, 0.3), std::nullopt);
  const auto fired = process.run(300, 0, 1.0, 90);

  ASSERT_TRUE(fired.has_value());
  EXPECT_DOUBLE_EQ(*fired, 102); // the first scan with the 90 s call
  EXPECT_EQ(process.last().reason, HangReason::call_in_progress);
  EXPECT_DOUBLE_EQ(process.last().stalled_seconds, 90);
  EXPECT_EQ(process.last().call_api, kStreamSynchronize);
}

TEST(HangDetector, ThresholdsComeFromSettings) {
  HangSettings settings;
  settings.stalled_launch_seconds = 30;
  settings.busy_cpu_fraction = 0.5;
  ScannedProcess process(settings);
  ASSERT_EQ(process.run(20, 1000, 0.3), std::nullopt);
  const auto fired = process.run(100, 0, 0.6);

  ASSERT_TRUE(fired.has_value());
  EXPECT_DOUBLE_EQ(*fired, 20 + 30);
}

TEST(HangDetector, ReasonNames) {
  EXPECT_EQ(hang_reason_name(HangReason::none), "none");
  EXPECT_EQ(hang_reason_name(HangReason::call_in_progress), "call_in_progress");
  EXPECT_EQ(hang_reason_name(HangReason::launches_stalled), "launches_stalled");
}

} // namespace
} // namespace neutracer
