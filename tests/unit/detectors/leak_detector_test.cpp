// SPDX-License-Identifier: Apache-2.0
#include "detectors/leak_detector.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <deque>
#include <numbers>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace neutracer {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
// CLOCK_MONOTONIC starts anywhere: windows are not aligned with the workload's start.
constexpr double kClockStart = 12345.678;
constexpr double kScanSeconds = 2;

std::uint64_t ns(double seconds) {
  return static_cast<std::uint64_t>(std::llround((kClockStart + seconds) * 1e9));
}

// A process's synthetic memory stream; times are seconds since the workload started.
class Process {
public:
  std::uint64_t alloc(double t, std::uint64_t bytes) {
    const std::uint64_t address = next_address_;
    next_address_ += bytes + 4096;
    live_[address] = bytes;
    used_ += bytes;
    changes_.push_back({ns(t), MemoryChangeKind::allocation, address, bytes, used_, 0});
    return address;
  }
  void free(double t, std::uint64_t address) {
    const auto it = live_.find(address);
    ASSERT_NE(it, live_.end());
    used_ -= it->second;
    changes_.push_back({ns(t), MemoryChangeKind::free, address, it->second, used_, 0});
    live_.erase(it);
  }
  // A free of memory allocated before tracing began: the level does not move.
  void free_unknown(double t, std::uint64_t address) {
    changes_.push_back({ns(t), MemoryChangeKind::free, address, 0, used_, 0});
  }
  const std::vector<MemoryChange> &changes() const { return changes_; }
  std::uint64_t used() const { return used_; }

private:
  std::uint64_t next_address_ = 0x7f0000000000;
  std::uint64_t used_ = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> live_;
  std::vector<MemoryChange> changes_;
};

struct Scan {
  double t = 0;
  LeakVerdict verdict;
};

// Feeds the stream to a detector in scan-sized batches, evaluating after each, like the daemon.
std::vector<Scan> replay(const Process &process, double end_seconds, LeakSettings settings = {},
                         std::optional<std::uint64_t> device_free = std::nullopt) {
  LeakDetector detector(settings);
  const auto &changes = process.changes();
  std::vector<Scan> scans;
  std::size_t next = 0;
  std::uint64_t used = 0;
  for (int i = 1; i * kScanSeconds <= end_seconds; ++i) {
    const double t = i * kScanSeconds;
    const std::size_t begin = next;
    while (next < changes.size() && changes[next].time_ns <= ns(t))
      used = changes[next++].used_after;
    detector.observe(std::span(changes).subspan(begin, next - begin));
    scans.push_back({t, detector.evaluate(ns(t), used, device_free)});
  }
  return scans;
}

std::optional<double> first_suspected(const std::vector<Scan> &scans) {
  for (const auto &scan : scans)
    if (scan.verdict.suspected)
      return scan.t;
  return std::nullopt;
}

bool any_trend(const std::vector<Scan> &scans) {
  for (const auto &scan : scans)
    if (scan.verdict.trend)
      return true;
  return false;
}

// Latest acceptable detection: the windows to judge, plus one for alignment and scanning.
double latency_bound(const LeakSettings &settings) {
  return (settings.windows + 1) * settings.window_seconds;
}

// Weights and optimizer state allocated once at start-up.
void load_model(Process &process, std::uint64_t bytes, std::uint64_t chunk) {
  for (std::uint64_t done = 0; done < bytes; done += chunk)
    process.alloc(0.001 * static_cast<double>(done / chunk), chunk);
}

TEST(LeakDetector, TrainingSawtoothStaysSilent) {
  Process process;
  load_model(process, 4 * kGiB, 256 * kMiB);
  // A step every half second: 20 activations of 100 MiB, freed by the backward pass.
  for (double step = 1; step < 30 * 60; step += 0.5) {
    std::vector<std::uint64_t> activations;
    for (int i = 0; i < 20; ++i)
      activations.push_back(process.alloc(step + 0.01 * i, 100 * kMiB));
    for (int i = 19; i >= 0; --i)
      process.free(step + 0.3 + 0.005 * (19 - i), activations[i]);
  }
  const auto scans = replay(process, 30 * 60);

  EXPECT_EQ(first_suspected(scans), std::nullopt);
  EXPECT_FALSE(any_trend(scans));
  EXPECT_EQ(scans.back().verdict.growth_bytes_per_second, 0);
  // The first step's activations were sampled and freed.
  EXPECT_EQ(scans.back().verdict.sampled, 16u + 20u);
  EXPECT_EQ(scans.back().verdict.unfreed, 16u);
}

TEST(LeakDetector, SlowTrendIgnoresAWarmUpThenPlateau) {
  // A caching allocator grows by 20 MiB segments for two minutes, then serves from its cache.
  // Two minutes of steady 100 MiB/s growth are a fast leak while they last (the fast trend
  // has its own tests); the slow trend alone never sees five rising minutes.
  LeakSettings settings;
  settings.fast_windows = 0;
  Process process;
  for (int i = 0; i < 600; ++i)
    process.alloc(i * 0.2, 20 * kMiB);
  const auto scans = replay(process, 32 * 60, settings);

  EXPECT_EQ(first_suspected(scans), std::nullopt);
  EXPECT_FALSE(any_trend(scans));
  // Every sample is still held: only the trend keeps this silent.
  const auto &last = scans.back().verdict;
  EXPECT_GE(last.sampled, LeakSettings{}.min_samples);
  EXPECT_EQ(last.unfreed, last.sampled);
  EXPECT_GE(last.probability, LeakSettings{}.probability_threshold);
  EXPECT_EQ(last.growth_bytes_per_second, 0);
  EXPECT_EQ(last.used_bytes, 600 * 20 * kMiB);
}

TEST(LeakDetector, OneOffBigAllocationStaysSilent) {
  Process process;
  load_model(process, 2 * kGiB, 256 * kMiB);
  for (double step = 1; step < 20 * 60; step += 1) {
    if (step == 300)
      process.alloc(step, 10 * kGiB); // e.g. a KV cache, kept for good
    std::vector<std::uint64_t> activations;
    for (int i = 0; i < 4; ++i)
      activations.push_back(process.alloc(step + 0.1 * i, 128 * kMiB));
    for (const auto address : activations)
      process.free(step + 0.6, address);
  }
  const auto scans = replay(process, 20 * 60);

  EXPECT_EQ(first_suspected(scans), std::nullopt);
  EXPECT_FALSE(any_trend(scans));
  EXPECT_EQ(scans.back().verdict.used_bytes, 12 * kGiB);
}

TEST(LeakDetector, SlowlyOscillatingInferenceLoadStaysSilent) {
  Process process;
  process.alloc(0, 4 * kGiB); // weights
  // Concurrent requests follow the traffic, from 1 to 17 and back every ten minutes; each holds
  // 256 MiB for 1.5 s.
  std::deque<std::pair<double, std::uint64_t>> requests; // end time, address
  for (int tick = 1; tick < 40 * 600; ++tick) {
    const double t = tick * 0.1;
    while (!requests.empty() && requests.front().first <= t) {
      process.free(t, requests.front().second);
      requests.pop_front();
    }
    const double target = 1 + 8 * (1 - std::cos(2 * std::numbers::pi * t / 600));
    while (static_cast<double>(requests.size()) < target)
      requests.emplace_back(t + 1.5, process.alloc(t + 0.001, 256 * kMiB));
  }
  const auto scans = replay(process, 40 * 60);

  EXPECT_EQ(first_suspected(scans), std::nullopt);
  // The rising traffic alone looks like a leak: the freed samples are what keep it silent.
  EXPECT_TRUE(any_trend(scans));
  for (const auto &scan : scans) {
    if (scan.verdict.trend) {
      EXPECT_LT(scan.verdict.probability, 0.25) << "at " << scan.t;
    }
  }
}

TEST(LeakDetector, SteadyLeakUnderSawtoothFires) {
  Process process;
  load_model(process, 2 * kGiB, 256 * kMiB);
  // Each second: activations up, the step's output kept (10 MiB leaked), activations freed.
  for (double step = 1; step < 10 * 60; step += 1) {
    std::vector<std::uint64_t> activations;
    for (int i = 0; i < 4; ++i)
      activations.push_back(process.alloc(step + 0.1 * i, 128 * kMiB));
    process.alloc(step + 0.45, 10 * kMiB);
    for (const auto address : activations)
      process.free(step + 0.6, address);
  }
  const LeakSettings settings;
  const auto scans = replay(process, 10 * 60, settings, 40 * kGiB);

  const auto detected = first_suspected(scans);
  ASSERT_TRUE(detected.has_value());
  EXPECT_LT(*detected - 1, latency_bound(settings));
  const auto &last = scans.back().verdict;
  EXPECT_TRUE(last.suspected);
  EXPECT_NEAR(last.growth_bytes_per_second, 10.0 * kMiB, 0.02 * 10 * kMiB);
  ASSERT_TRUE(last.seconds_until_full.has_value());
  EXPECT_NEAR(*last.seconds_until_full, 40.0 * kGiB / last.growth_bytes_per_second, 1e-6);
  EXPECT_GE(last.probability, 0.9);
}

TEST(LeakDetector, StepLeakFires) {
  Process process;
  process.alloc(0, kGiB);
  // +100 MiB kept every 30 s (a list of tensors growing per chunk), small noise each second.
  for (double t = 1; t < 12 * 60; t += 1) {
    if (static_cast<int>(t) % 30 == 0)
      process.alloc(t, 100 * kMiB);
    process.free(t + 0.5, process.alloc(t + 0.2, 8 * kMiB));
  }
  const LeakSettings settings;
  const auto scans = replay(process, 12 * 60, settings);

  const auto detected = first_suspected(scans);
  ASSERT_TRUE(detected.has_value());
  EXPECT_LT(*detected - 30, latency_bound(settings));
  const auto &last = scans.back().verdict;
  EXPECT_TRUE(last.suspected);
  EXPECT_NEAR(last.growth_bytes_per_second, 100.0 * kMiB / 30, 0.05 * 100 * kMiB / 30);
  EXPECT_EQ(last.seconds_until_full, std::nullopt); // no device reading
}

TEST(LeakDetector, ManySmallKeptAllocationsFire) {
  Process process;
  load_model(process, kGiB, 256 * kMiB);
  // `val += x.requires_grad_()`: each step allocates eight 2 MiB blocks and frees only two.
  for (double step = 1; step < 10 * 60; step += 0.5) {
    std::vector<std::uint64_t> blocks;
    for (int i = 0; i < 8; ++i)
      blocks.push_back(process.alloc(step + 0.01 * i, 2 * kMiB));
    process.free(step + 0.2, blocks[0]);
    process.free(step + 0.2, blocks[1]);
  }
  const LeakSettings settings;
  const auto scans = replay(process, 10 * 60, settings);

  const auto detected = first_suspected(scans);
  ASSERT_TRUE(detected.has_value());
  EXPECT_LT(*detected - 1, latency_bound(settings));
  EXPECT_GE(scans.back().verdict.probability, 0.9);
  EXPECT_NEAR(scans.back().verdict.growth_bytes_per_second, 24.0 * kMiB, 0.02 * 24 * kMiB);
}

TEST(LeakDetector, LeakThatStopsClearsWithinThreeWindows) {
  Process process;
  for (double t = 0; t < 400; t += 10)
    process.alloc(t, 100 * kMiB);
  // No changes at all afterwards: quiet windows carry the last level. The trend ends with the
  // first complete window whose minimum equals the previous one's: at worst the rest of the
  // leak's last window, one window at the final level, and one more.
  const auto scans = replay(process, 20 * 60);

  ASSERT_TRUE(first_suspected(scans).has_value());
  for (const auto &scan : scans) {
    if (scan.t >= 390 + 3 * 60) {
      EXPECT_FALSE(scan.verdict.trend) << "at " << scan.t;
    }
  }
  EXPECT_EQ(scans.back().verdict.growth_bytes_per_second, 0);
}

TEST(LeakDetector, ProbabilityIsRuleOfSuccession) {
  Process process;
  const auto first = process.alloc(1, 100 * kMiB);
  process.alloc(2, 100 * kMiB);
  process.alloc(3, 100 * kMiB);
  process.free(4, first);
  LeakDetector detector;
  detector.observe(process.changes());
  const auto verdict = detector.evaluate(ns(5), process.used(), std::nullopt);

  EXPECT_EQ(verdict.sampled, 3u);
  EXPECT_EQ(verdict.unfreed, 2u);
  EXPECT_DOUBLE_EQ(verdict.probability, 3.0 / 5.0);
  EXPECT_EQ(verdict.used_bytes, 200 * kMiB);
  EXPECT_FALSE(verdict.suspected);
}

TEST(LeakDetector, SamplesOnlyWhenTheMarkRisesByAStep) {
  Process process;
  for (int i = 0; i < 10; ++i)
    process.alloc(i, 10 * kMiB); // the 7th crosses 64 MiB; the rest stay within a step of it
  LeakSettings settings;
  settings.high_water_step_bytes = 64 * kMiB;
  LeakDetector detector(settings);
  detector.observe(process.changes());

  EXPECT_EQ(detector.evaluate(ns(10), process.used(), std::nullopt).sampled, 1u);
}

TEST(LeakDetector, UnknownFreeIsIgnored) {
  Process process;
  process.alloc(1, 100 * kMiB);
  process.free_unknown(2, 0xdead0000);
  LeakDetector detector;
  detector.observe(process.changes());
  const auto verdict = detector.evaluate(ns(3), process.used(), std::nullopt);

  EXPECT_EQ(verdict.sampled, 1u);
  EXPECT_EQ(verdict.unfreed, 1u);
  EXPECT_DOUBLE_EQ(verdict.probability, 2.0 / 3.0);
}

TEST(LeakDetector, ReusedAddressCountsTheLostFree) {
  LeakDetector detector;
  const std::vector<MemoryChange> changes = {
      {ns(1), MemoryChangeKind::allocation, 0x1000, 100 * kMiB, 100 * kMiB, 0},
      // The free of 0x1000 was lost; the driver handed the address out again.
      {ns(2), MemoryChangeKind::allocation, 0x1000, 100 * kMiB, 200 * kMiB, 0},
  };
  detector.observe(changes);
  const auto verdict = detector.evaluate(ns(3), 200 * kMiB, std::nullopt);

  EXPECT_EQ(verdict.sampled, 2u);
  EXPECT_EQ(verdict.unfreed, 1u);
}

TEST(LeakDetector, SampleCapForgetsTheOldestAsUnfreed) {
  LeakSettings settings;
  settings.max_sampled_blocks = 2;
  Process process;
  const auto a = process.alloc(1, 100 * kMiB);
  process.alloc(2, 100 * kMiB);
  const auto c = process.alloc(3, 100 * kMiB);
  process.free(4, a); // forgotten: not seen as freed
  process.free(5, c);
  LeakDetector detector(settings);
  detector.observe(process.changes());
  const auto verdict = detector.evaluate(ns(6), process.used(), std::nullopt);

  EXPECT_EQ(verdict.sampled, 3u);
  EXPECT_EQ(verdict.unfreed, 2u);
}

TEST(LeakDetector, SecondsUntilFullNeedsGrowthAndADeviceReading) {
  Process process;
  for (double t = 0; t < 360; t += 1)
    process.alloc(t, 2 * kMiB);
  LeakDetector detector;
  detector.observe(process.changes());

  const auto growing = detector.evaluate(ns(360), process.used(), 60 * kGiB);
  ASSERT_GT(growing.growth_bytes_per_second, 0);
  ASSERT_TRUE(growing.seconds_until_full.has_value());
  EXPECT_NEAR(*growing.seconds_until_full, 60.0 * kGiB / (2.0 * kMiB), 60);
  EXPECT_EQ(detector.evaluate(ns(360), process.used(), std::nullopt).seconds_until_full,
            std::nullopt);
  // Long after the growth stopped the slope is flat: no estimate.
  const auto flat = detector.evaluate(ns(3600), process.used(), 60 * kGiB);
  EXPECT_EQ(flat.growth_bytes_per_second, 0);
  EXPECT_EQ(flat.seconds_until_full, std::nullopt);
}

TEST(LeakDetector, NeedsEveryWindowToRise) {
  Process process;
  // Rises in big steps every 130 s: one window in two has the same minimum as the previous one.
  for (double t = 0; t < 20 * 60; t += 130)
    process.alloc(t, kGiB);
  const auto scans = replay(process, 20 * 60);

  EXPECT_FALSE(any_trend(scans));
  EXPECT_EQ(first_suspected(scans), std::nullopt);
}

TEST(LeakDetector, SmallGrowthBelowTheFloorStaysSilent) {
  Process process;
  process.alloc(0, kGiB);
  // 0.5 MiB/s: rising every window, but 120 MiB over the four rises, below 256 MiB.
  for (double t = 1; t < 20 * 60; t += 4)
    process.alloc(t, 2 * kMiB);
  const auto scans = replay(process, 20 * 60);

  EXPECT_EQ(first_suspected(scans), std::nullopt);
  EXPECT_FALSE(any_trend(scans));
  EXPECT_GT(scans.back().verdict.growth_bytes_per_second, 0);
}

// The fast trend: steady, repeated growth of at least 128 MiB over five 2 s windows.

// The stand-in's and the GPU validation's leak: 4 MiB kept every 200 ms, under a sawtooth of
// eight 8 MiB temporaries allocated and freed each round.
void fast_leak(Process &process, double from, double to) {
  for (double t = from; t < to; t += 0.2) {
    process.alloc(t, 4 * kMiB);
    std::vector<std::uint64_t> temporaries;
    for (int i = 0; i < 8; ++i)
      temporaries.push_back(process.alloc(t + 0.01 + 0.001 * i, 8 * kMiB));
    for (const auto address : temporaries)
      process.free(t + 0.05, address);
  }
}

TEST(LeakDetector, FastLeakIsFlaggedWithin15Seconds) {
  Process process;
  process.alloc(0, 512 * kMiB); // weights
  fast_leak(process, 1, 60);
  const auto scans = replay(process, 60);

  const auto detected = first_suspected(scans);
  ASSERT_TRUE(detected.has_value());
  EXPECT_LE(*detected - 1, 15);
  const auto &verdict = scans[static_cast<std::size_t>(*detected / kScanSeconds) - 1].verdict;
  EXPECT_TRUE(verdict.fast_trend);
  EXPECT_FALSE(verdict.trend) << "the slow trend needs minutes";
  // The slope of the fast windows, the first of which may hold the leak's start.
  EXPECT_GT(verdict.growth_bytes_per_second, 14.0 * kMiB);
  EXPECT_LT(verdict.growth_bytes_per_second, 21.0 * kMiB);
  EXPECT_GE(verdict.probability, 0.75);
}

TEST(LeakDetector, LoopThatFreesItsPeakIsJudgedByWhatItKeeps) {
  // Each round keeps two 4 MiB blocks and frees the newest right away: every high-water mark
  // is crossed by the block about to be freed. The sample is the oldest block still live since
  // the last one, a kept block, so the evidence follows what the loop keeps.
  Process process;
  for (double t = 1; t < 40; t += 0.2) {
    process.alloc(t, 4 * kMiB);
    process.free(t + 0.01, process.alloc(t + 0.005, 4 * kMiB));
  }
  const auto scans = replay(process, 40);

  const auto detected = first_suspected(scans);
  ASSERT_TRUE(detected.has_value());
  EXPECT_LE(*detected - 1, 15);
  EXPECT_EQ(scans.back().verdict.unfreed, scans.back().verdict.sampled);
}

TEST(LeakDetector, FastTrendWaitsUntilAWarmUpBurstLeavesItsWindows) {
  // A 600 MiB warm-up burst across a window boundary, then steady growth of 20 MiB/s: while
  // the burst is among the judged rises the growth is not steady; once it has left, the steady
  // growth alone is a fast leak.
  Process process;
  // From 30.9 s to 32.4 s: across the window boundary at 32.322 s (kClockStart + t = 12378).
  const double burst = 30.9;
  for (int i = 0; i < 30; ++i)
    process.alloc(burst + 0.05 * i, 20 * kMiB);
  for (double t = burst + 2; t < 120; t += 1)
    process.alloc(t, 20 * kMiB);
  const auto scans = replay(process, 120);

  const auto detected = first_suspected(scans);
  ASSERT_TRUE(detected.has_value());
  EXPECT_GE(*detected, burst + 12) << "flagged while the burst was a rise";
  EXPECT_LE(*detected, burst + 12 + 15);
}

TEST(LeakDetector, GrowingShapesAreNotAFastTrend) {
  // A batch-size ramp under a caching allocator: every step needs a block larger than any
  // cached one, 16 MiB growing by 2 MiB, for 40 s (5 GiB), then a plateau.
  Process process;
  std::uint64_t bytes = 16 * kMiB;
  for (double t = 1; t < 41; t += 0.6, bytes += 2 * kMiB)
    process.alloc(t, bytes);
  const auto scans = replay(process, 600);

  EXPECT_EQ(first_suspected(scans), std::nullopt);
  for (const auto &scan : scans)
    EXPECT_FALSE(scan.verdict.fast_trend) << "at " << scan.t;
}

TEST(LeakDetector, SlowLeakIsLeftToTheSlowTrend) {
  // 5 MiB/s: rising in every 2 s window, but 40 MiB over the four rises, below 128 MiB.
  Process process;
  process.alloc(0, kGiB);
  for (double t = 1; t < 8 * 60; t += 1)
    process.alloc(t, 5 * kMiB);
  const LeakSettings settings;
  const auto scans = replay(process, 8 * 60, settings);

  for (const auto &scan : scans)
    EXPECT_FALSE(scan.verdict.fast_trend) << "at " << scan.t;
  const auto detected = first_suspected(scans);
  ASSERT_TRUE(detected.has_value());
  EXPECT_LT(*detected - 1, latency_bound(settings));
  EXPECT_GT(*detected, 60 * 4);
}

TEST(LeakDetector, FastWindowsZeroTurnsTheFastTrendOff) {
  LeakSettings settings;
  settings.fast_windows = 0;
  Process process;
  fast_leak(process, 1, 8 * 60);
  const auto scans = replay(process, 8 * 60, settings);

  const auto detected = first_suspected(scans);
  ASSERT_TRUE(detected.has_value());
  EXPECT_GT(*detected, 60 * 4) << "only the slow trend";
  for (const auto &scan : scans)
    EXPECT_FALSE(scan.verdict.fast_trend);
}

TEST(LeakDetector, ThousandsOfDistinctSizesStillDetectARepeatedLeak) {
  // A process asking for ever new sizes (bounded memory: the sizes seen start over) that then
  // leaks one size steadily.
  Process process;
  for (int i = 0; i < 20000; ++i)
    process.free(1 + i * 1e-5 + 5e-6,
                 process.alloc(1 + i * 1e-5, 4096 + 512 * static_cast<std::uint64_t>(i)));
  fast_leak(process, 2, 40);
  const auto scans = replay(process, 40);

  const auto detected = first_suspected(scans);
  ASSERT_TRUE(detected.has_value());
  EXPECT_LE(*detected - 2, 15);
}

TEST(LeakDetector, NothingObservedIsNotSuspected) {
  const LeakDetector detector;
  const auto verdict = detector.evaluate(ns(1000), 5 * kGiB, 10 * kGiB);

  EXPECT_FALSE(verdict.suspected);
  EXPECT_FALSE(verdict.trend);
  EXPECT_EQ(verdict.used_bytes, 5 * kGiB);
  EXPECT_DOUBLE_EQ(verdict.probability, 0.5);
  EXPECT_EQ(verdict.seconds_until_full, std::nullopt);
}

} // namespace
} // namespace neutracer
