// The leak detector at its default settings over allocation streams recorded on an H100 by
// tests/gpu/detectors.py (each process's /api/v1/memory document, in
// tests/fixtures/leak_streams/): the leaks must be flagged within 15 s of their start, the
// healthy workloads never. Replayed with a fake clock and the daemon's 2 s scans.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "detectors/leak_detector.h"

namespace neutracer {
namespace {

// CLOCK_MONOTONIC starts anywhere: windows are not aligned with the recording's start.
constexpr double kClockStartMs = 7654321.5;
constexpr double kScanMs = 2000; // the daemon's default scan interval

std::uint64_t ns(double ms) { return static_cast<std::uint64_t>(std::llround((kClockStartMs + ms) * 1e6)); }

struct Recording {
  std::optional<double> fault_ms;
  double end_ms = 0;
  std::vector<MemoryChange> changes;
};

Recording load(const std::string &name) {
  std::ifstream in(std::string(NEUTRACER_FIXTURES_DIR) + "/leak_streams/" + name + ".json");
  EXPECT_TRUE(in) << name;
  const auto document = nlohmann::json::parse(in);
  Recording recording;
  if (!document["fault_ms"].is_null())
    recording.fault_ms = document["fault_ms"].get<double>();
  recording.end_ms = document["end_ms"].get<double>();
  // Each block is [allocated_ms, bytes, freed_ms or null]: one allocation and maybe one free.
  std::vector<std::tuple<double, int, std::uint64_t, std::uint64_t>> events; // time, free?, ...
  std::uint64_t address = 0x7f0000000000;
  for (const auto &block : document["blocks"]) {
    const auto bytes = block[1].get<std::uint64_t>();
    events.emplace_back(block[0].get<double>(), 0, address, bytes);
    if (!block[2].is_null())
      events.emplace_back(block[2].get<double>(), 1, address, bytes);
    address += bytes + 4096;
  }
  std::sort(events.begin(), events.end());
  std::uint64_t used = 0;
  for (const auto &[ms, is_free, block_address, bytes] : events) {
    used = is_free ? used - bytes : used + bytes;
    recording.changes.push_back({ns(ms), is_free ? MemoryChangeKind::free : MemoryChangeKind::allocation,
                                 block_address, bytes, used, 0});
  }
  return recording;
}

// Milliseconds from the fault (or the first allocation) to the first scan that suspects a leak.
std::optional<double> detection_ms(const Recording &recording) {
  LeakDetector detector;
  std::size_t next = 0;
  std::uint64_t used = 0;
  for (double t = kScanMs; t <= recording.end_ms + kScanMs; t += kScanMs) {
    const std::size_t begin = next;
    while (next < recording.changes.size() && recording.changes[next].time_ns <= ns(t))
      used = recording.changes[next++].used_after;
    detector.observe(std::span(recording.changes).subspan(begin, next - begin));
    if (detector.evaluate(ns(t), used, std::nullopt).suspected)
      return t - recording.fault_ms.value_or(0);
  }
  return std::nullopt;
}

class RecordedLeak : public ::testing::TestWithParam<const char *> {};
class RecordedHealthy : public ::testing::TestWithParam<const char *> {};

TEST_P(RecordedLeak, IsFlaggedWithin15Seconds) {
  const auto recording = load(GetParam());
  ASSERT_TRUE(recording.fault_ms.has_value());
  const auto latency = detection_ms(recording);
  ASSERT_TRUE(latency.has_value()) << GetParam() << " never flagged";
  EXPECT_LE(*latency, 15000) << GetParam();
  RecordProperty("detection_ms", std::to_string(*latency));
}

TEST_P(RecordedHealthy, IsNeverFlagged) {
  const auto recording = load(GetParam());
  EXPECT_EQ(detection_ms(recording), std::nullopt) << GetParam();
}

// Tensors kept in a list (a few dropped each round) and the autograd graph kept by a running
// sum, with PyTorch's default allocator and with expandable segments (VMM pages).
INSTANTIATE_TEST_SUITE_P(H100, RecordedLeak,
                         ::testing::Values("leak_list", "leak_list_vmm", "leak_graph",
                                           "leak_graph_vmm"));
INSTANTIATE_TEST_SUITE_P(H100, RecordedHealthy,
                         ::testing::Values("cnn_train", "cnn_train_vmm", "transformer",
                                           "transformer_vmm", "inference", "inference_vmm",
                                           "warmup_steady"));

// A batch size ramped for 40 s under expandable segments: 20 MiB pages, one size, mapped at
// 11 MiB/s on average and up to 16 MiB/s over 9 s. While it ramps it is indistinguishable
// from a leak from the driver's side.
TEST(RecordedRamp, ExpandableSegmentsRampAgainstTheFastTrend) {
  const auto recording = load("warmup_steady_vmm");
  const auto latency = detection_ms(recording);
  RecordProperty("detection_ms", latency ? std::to_string(*latency) : "never");
  // Recorded: flagged at 38 s, where a 9 s stretch of the ramp ran at 16 MiB/s; never during
  // its first 30 s (README, "Known limit").
  if (latency) {
    EXPECT_GE(*latency, 30000);
  }
}

} // namespace
} // namespace neutracer
