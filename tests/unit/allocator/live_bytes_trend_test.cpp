// SPDX-License-Identifier: Apache-2.0
#include "allocator/live_bytes_trend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace neutracer {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr double kWindowSeconds = 2; // the default
// CLOCK_MONOTONIC starts anywhere; this start is aligned with the 2 s windows so that each
// level below lands in a window of its own.
constexpr double kClockStart = 5000;

std::uint64_t ns(double seconds) {
  return static_cast<std::uint64_t>(std::llround((kClockStart + seconds) * 1e9));
}

// One level per window, early in it; evaluated at the start of the window after the last.
// A window's minimum includes the level carried into it, so while live bytes rise the minimum
// of window i is levels[i - 1].
LiveBytesVerdict one_level_per_window(const std::vector<std::uint64_t> &levels,
                                      LiveBytesTrendSettings settings = {}) {
  LiveBytesTrend trend(settings);
  for (std::size_t i = 0; i < levels.size(); ++i)
    trend.observe(ns(static_cast<double>(i) * kWindowSeconds + 0.5), levels[i]);
  return trend.evaluate(ns(static_cast<double>(levels.size()) * kWindowSeconds));
}

TEST(LiveBytesTrend, SteadyRiseIsRising) {
  // 16 MiB a window: 8 MiB/s, 64 MiB over the four rises.
  const auto verdict =
      one_level_per_window({0, 16 * kMiB, 32 * kMiB, 48 * kMiB, 64 * kMiB, 80 * kMiB});
  EXPECT_EQ(verdict.minimums,
            (std::vector<std::uint64_t>{0, 16 * kMiB, 32 * kMiB, 48 * kMiB, 64 * kMiB}));
  EXPECT_TRUE(verdict.rising);
  EXPECT_NEAR(verdict.growth_bytes_per_second, 8.0 * kMiB, 1e-6 * kMiB);
}

TEST(LiveBytesTrend, SlopeIsTheLeastSquaresFitOfTheMinimums) {
  // Rises of 4, 8, 4, 16 MiB: the fit through (0, 0), (2, 4), (4, 12), (6, 16), (8, 32) in
  // seconds and MiB has slope 152 / 40 = 3.8 MiB/s.
  const auto verdict = one_level_per_window(
      {0, 4 * kMiB, 12 * kMiB, 16 * kMiB, 32 * kMiB, 40 * kMiB}, {.min_growth_bytes = 1});
  ASSERT_EQ(verdict.minimums.size(), 5u);
  EXPECT_NEAR(verdict.growth_bytes_per_second, 3.8 * kMiB, 1e-6 * kMiB);
}

TEST(LiveBytesTrend, LiveBytesContinuouslyRisingAtAnyAlignmentIsRising) {
  // 10 MiB/s, seen every 0.3 s from a start that is not on a window boundary.
  LiveBytesTrend trend;
  for (double t = 0.7; t < 13; t += 0.3)
    trend.observe(ns(t), static_cast<std::uint64_t>(t * 10 * kMiB));
  const auto verdict = trend.evaluate(ns(13));
  EXPECT_EQ(verdict.minimums.size(), 5u);
  EXPECT_TRUE(verdict.rising);
  EXPECT_NEAR(verdict.growth_bytes_per_second, 10.0 * kMiB, 0.5 * kMiB);
}

TEST(LiveBytesTrend, OneBurstThenFlatIsNotRising) {
  // A warm-up allocates its pool in one go, then holds it.
  const auto verdict =
      one_level_per_window({10 * kMiB, 10 * kMiB, 10 * kMiB, 500 * kMiB, 500 * kMiB, 500 * kMiB});
  EXPECT_EQ(verdict.minimums,
            (std::vector<std::uint64_t>{10 * kMiB, 10 * kMiB, 10 * kMiB, 500 * kMiB, 500 * kMiB}));
  EXPECT_FALSE(verdict.rising);
}

TEST(LiveBytesTrend, BurstAmongSmallRisesIsNotSteady) {
  // Rising in every window, but the first rise is 20 times the later ones.
  const auto verdict =
      one_level_per_window({0, 200 * kMiB, 210 * kMiB, 220 * kMiB, 230 * kMiB, 240 * kMiB});
  EXPECT_EQ(verdict.minimums.size(), 5u);
  EXPECT_FALSE(verdict.rising);
  // A first rise within 4 times the later ones is a trend.
  EXPECT_TRUE(
      one_level_per_window({0, 40 * kMiB, 50 * kMiB, 60 * kMiB, 70 * kMiB, 80 * kMiB}).rising);
}

TEST(LiveBytesTrend, RiseRatioIsHeldAgainstLaterRisesOnly) {
  // A small first rise (a leak starting late in its window) is steady...
  EXPECT_TRUE(
      one_level_per_window({0, 2 * kMiB, 12 * kMiB, 22 * kMiB, 32 * kMiB, 42 * kMiB}).rising);
  // ...as is a rise that later rises outgrow; a rise over 4 times a later one is not.
  EXPECT_TRUE(
      one_level_per_window({0, 10 * kMiB, 20 * kMiB, 30 * kMiB, 80 * kMiB, 90 * kMiB}).rising);
  EXPECT_FALSE(
      one_level_per_window({0, 10 * kMiB, 20 * kMiB, 61 * kMiB, 71 * kMiB, 80 * kMiB}).rising);
  // Exactly 4 times is still steady.
  EXPECT_TRUE(
      one_level_per_window({0, 10 * kMiB, 20 * kMiB, 60 * kMiB, 70 * kMiB, 80 * kMiB}).rising);
}

TEST(LiveBytesTrend, EveryWindowMustRise) {
  // Steady and enough after a first window that did not rise: not yet a trend.
  const auto verdict = one_level_per_window({0, 0, 20 * kMiB, 40 * kMiB, 60 * kMiB, 80 * kMiB});
  EXPECT_EQ(verdict.minimums, (std::vector<std::uint64_t>{0, 0, 20 * kMiB, 40 * kMiB, 60 * kMiB}));
  EXPECT_FALSE(verdict.rising);
}

TEST(LiveBytesTrend, SawtoothWithFlatMinimumIsNotRising) {
  // Each 1 s step allocates 400 MiB of temporaries on top of 100 MiB kept, then frees them.
  LiveBytesTrend trend;
  for (int step = 0; step < 15; ++step) {
    trend.observe(ns(step + 0.1), 100 * kMiB);
    trend.observe(ns(step + 0.4), 300 * kMiB + static_cast<std::uint64_t>(step) * 10 * kMiB);
    trend.observe(ns(step + 0.7), 500 * kMiB + static_cast<std::uint64_t>(step) * 10 * kMiB);
  }
  trend.observe(ns(15.1), 100 * kMiB);
  const auto verdict = trend.evaluate(ns(16));
  EXPECT_EQ(verdict.minimums, std::vector<std::uint64_t>(5, 100 * kMiB));
  EXPECT_FALSE(verdict.rising);
  EXPECT_EQ(verdict.growth_bytes_per_second, 0.0);
}

TEST(LiveBytesTrend, RiseBelowMinGrowthIsNotRising) {
  // 1 MiB/s: steady, but 8 MiB over the rises.
  const auto verdict = one_level_per_window({0, 2 * kMiB, 4 * kMiB, 6 * kMiB, 8 * kMiB, 10 * kMiB});
  EXPECT_FALSE(verdict.rising);
  EXPECT_NEAR(verdict.growth_bytes_per_second, 1.0 * kMiB, 1e-6 * kMiB);
  // Just enough growth over the same windows is.
  EXPECT_TRUE(
      one_level_per_window({0, 8 * kMiB, 16 * kMiB, 24 * kMiB, 32 * kMiB, 40 * kMiB}).rising);
}

TEST(LiveBytesTrend, TooFewWindowsIsNotRising) {
  // Four complete windows of a fast rise; five are needed.
  const auto verdict = one_level_per_window({0, 64 * kMiB, 128 * kMiB, 192 * kMiB});
  EXPECT_EQ(verdict.minimums.size(), 4u);
  EXPECT_FALSE(verdict.rising);
  EXPECT_GT(verdict.growth_bytes_per_second, 0);
}

TEST(LiveBytesTrend, FallingLiveBytesHaveNoGrowth) {
  const auto verdict =
      one_level_per_window({80 * kMiB, 64 * kMiB, 48 * kMiB, 32 * kMiB, 16 * kMiB, 0});
  EXPECT_FALSE(verdict.rising);
  EXPECT_EQ(verdict.growth_bytes_per_second, 0.0);
}

} // namespace
} // namespace neutracer
