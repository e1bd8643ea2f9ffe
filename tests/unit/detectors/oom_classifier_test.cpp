// SPDX-License-Identifier: Apache-2.0
#include "detectors/oom_classifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace neutracer {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint32_t kOutOfMemory = 2; // CUDA_ERROR_OUT_OF_MEMORY
constexpr double kClockStart = 5000.25;

std::uint64_t ns(double seconds) {
  return static_cast<std::uint64_t>(std::llround((kClockStart + seconds) * 1e9));
}

// Builds one process's change stream; times are seconds since the workload started.
class Stream {
public:
  std::uint64_t alloc(double t, std::uint64_t bytes) {
    const std::uint64_t address = next_address_;
    next_address_ += bytes;
    live_[address] = bytes;
    used_ += bytes;
    changes_.push_back({ns(t), MemoryChangeKind::allocation, address, bytes, used_, 0});
    return address;
  }
  void free(double t, std::uint64_t address) {
    const auto bytes = live_.at(address);
    used_ -= bytes;
    live_.erase(address);
    changes_.push_back({ns(t), MemoryChangeKind::free, address, bytes, used_, 0});
  }
  void fail(double t, std::uint64_t bytes, std::uint32_t error = kOutOfMemory) {
    changes_.push_back({ns(t), MemoryChangeKind::failed_allocation, 0, bytes, used_, error});
  }
  void free_unknown(double t, std::uint64_t address) {
    changes_.push_back({ns(t), MemoryChangeKind::free, address, 0, used_, 0});
  }
  // Hands over the changes made since the last call, like one scan.
  std::vector<MemoryChange> take() { return std::exchange(changes_, {}); }
  std::uint64_t used() const { return used_; }

private:
  std::uint64_t next_address_ = 0x7f0000000000;
  std::uint64_t used_ = 0;
  std::unordered_map<std::uint64_t, std::uint64_t> live_;
  std::vector<MemoryChange> changes_;
};

// A failed allocation, a cache flush, and the retry that succeeds.
void retry(Stream &stream, double t, std::uint64_t bytes, std::uint64_t cached_block) {
  stream.fail(t, bytes);
  stream.free(t + 0.05, cached_block);
  stream.alloc(t + 0.1, bytes);
}

TEST(OomClassifier, FullDeviceIsCapacity) {
  Stream stream;
  for (int i = 0; i < 8; ++i)
    stream.alloc(i, kGiB);
  stream.fail(10, kGiB);
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);

  const auto events = classifier.take_oom_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].cause, OomCause::capacity);
  EXPECT_EQ(events[0].time_ns, ns(10));
  EXPECT_EQ(events[0].requested_bytes, kGiB);
  EXPECT_EQ(events[0].used_bytes, 8 * kGiB);
  EXPECT_EQ(events[0].device_free_bytes, std::nullopt);
  EXPECT_EQ(events[0].error, kOutOfMemory);
  EXPECT_EQ(classifier.oom_count(OomCause::capacity), 1u);
  EXPECT_EQ(classifier.oom_count(OomCause::fragmentation), 0u);
}

TEST(OomClassifier, OnlyOutOfMemoryFailuresAreOoms) {
  // PyTorch with expandable segments probes cuMemCreate handle types: NOT_PERMITTED (800).
  Stream stream;
  stream.fail(1, 2 * kMiB, 800);
  stream.fail(2, 2 * kMiB, 1); // CUDA_ERROR_INVALID_VALUE
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);
  EXPECT_TRUE(classifier.take_oom_events().empty());
  EXPECT_EQ(classifier.oom_count(OomCause::capacity), 0u);
  EXPECT_EQ(classifier.oom_count(OomCause::fragmentation), 0u);
  EXPECT_EQ(classifier.retries(), 0u);
}

TEST(OomClassifier, MemoryHeldInSmallPiecesIsFragmentation) {
  Stream stream;
  for (int i = 0; i < 20480; ++i)
    stream.alloc(i * 0.001, 2 * kMiB); // 40 GiB in 2 MiB segments
  stream.fail(30, 8 * kGiB);
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);

  const auto events = classifier.take_oom_events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].cause, OomCause::fragmentation);
  EXPECT_EQ(events[0].used_bytes, 40 * kGiB);
  EXPECT_EQ(classifier.segment_count(), 20480u);
  EXPECT_EQ(classifier.largest_segment(), 2 * kMiB);
  EXPECT_EQ(classifier.live_bytes(), 40 * kGiB);
  EXPECT_DOUBLE_EQ(classifier.fragmentation_ratio(), 1.0 - 1.0 / 20480);
  EXPECT_EQ(classifier.oom_count(OomCause::fragmentation), 1u);
}

TEST(OomClassifier, RequestBeyondWhatTheProcessHoldsIsCapacity) {
  Stream stream;
  for (int i = 0; i < 100; ++i)
    stream.alloc(i * 0.01, 2 * kMiB); // 200 MiB in pieces, but the request is larger still
  stream.fail(5, kGiB);
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);

  ASSERT_EQ(classifier.take_oom_events().at(0).cause, OomCause::capacity);
}

TEST(OomClassifier, DeviceWithEnoughFreeBytesIsFragmentation) {
  Stream stream;
  for (int i = 0; i < 4; ++i)
    stream.alloc(i, kGiB);
  stream.fail(10, kGiB);
  OomClassifier classifier;
  classifier.observe(stream.take(), 3 * kGiB);
  stream.fail(20, kGiB);
  classifier.observe(stream.take(), 512 * kMiB);

  const auto events = classifier.take_oom_events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].cause, OomCause::fragmentation);
  EXPECT_EQ(events[0].device_free_bytes, 3 * kGiB);
  EXPECT_EQ(events[1].cause, OomCause::capacity);
  EXPECT_EQ(events[1].device_free_bytes, 512 * kMiB);
}

TEST(OomClassifier, TakeDrainsEvents) {
  Stream stream;
  stream.fail(1, kGiB);
  stream.fail(2, 2 * kGiB);
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);

  const auto events = classifier.take_oom_events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].requested_bytes, kGiB);
  EXPECT_EQ(events[1].requested_bytes, 2 * kGiB);
  EXPECT_TRUE(classifier.take_oom_events().empty());
  EXPECT_EQ(classifier.oom_count(OomCause::capacity), 2u);
}

TEST(OomClassifier, UndrainedEventsAreBounded) {
  FragmentationSettings settings;
  settings.max_pending_events = 3;
  Stream stream;
  for (int i = 0; i < 5; ++i)
    stream.fail(i, kGiB);
  OomClassifier classifier(settings);
  classifier.observe(stream.take(), std::nullopt);

  EXPECT_EQ(classifier.take_oom_events().size(), 3u);
  EXPECT_EQ(classifier.dropped_events(), 2u);
  EXPECT_EQ(classifier.oom_count(OomCause::capacity), 5u);
}

TEST(OomClassifier, FailFreeSucceedIsARetry) {
  Stream stream;
  const auto cached = stream.alloc(0, 2 * kGiB);
  stream.alloc(1, 2 * kGiB);
  retry(stream, 10, 4 * kGiB, cached);
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);

  EXPECT_EQ(classifier.retries(), 1u);
  // It held 4 GiB in two 2 GiB pieces when the 4 GiB request failed.
  EXPECT_EQ(classifier.oom_count(OomCause::fragmentation), 1u);
  EXPECT_EQ(classifier.live_bytes(), 6 * kGiB);
}

TEST(OomClassifier, RetrySpanningScansIsCounted) {
  Stream stream;
  const auto cached = stream.alloc(0, 2 * kGiB);
  stream.fail(10, 4 * kGiB);
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);
  stream.free(10.5, cached);
  stream.alloc(11, 4 * kGiB);
  classifier.observe(stream.take(), std::nullopt);

  EXPECT_EQ(classifier.retries(), 1u);
}

TEST(OomClassifier, FreeOfUntracedMemoryStillEnablesARetry) {
  Stream stream;
  stream.fail(10, kGiB);
  stream.free_unknown(10.1, 0x5000); // cached before tracing began
  stream.alloc(10.2, kGiB);
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);

  EXPECT_EQ(classifier.retries(), 1u);
}

TEST(OomClassifier, SuccessWithoutAFreeIsNoRetry) {
  Stream stream;
  stream.fail(10, kGiB);
  stream.alloc(10.1, kGiB); // another stream's memory came back: not the allocator's flush
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);

  EXPECT_EQ(classifier.retries(), 0u);
}

TEST(OomClassifier, FreeBeforeTheFailureIsNoRetry) {
  Stream stream;
  const auto block = stream.alloc(0, kGiB);
  stream.free(9.9, block);
  stream.fail(10, kGiB);
  stream.alloc(10.1, kGiB);
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);

  EXPECT_EQ(classifier.retries(), 0u);
}

TEST(OomClassifier, SuccessOutsideTheRetryWindowIsNoRetry) {
  Stream stream;
  const auto cached = stream.alloc(0, kGiB);
  stream.fail(10, kGiB);
  stream.free(10.5, cached);
  stream.alloc(12.5, kGiB); // 2.5 s after the failure; the window is 2 s
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);

  EXPECT_EQ(classifier.retries(), 0u);
}

TEST(OomClassifier, SmallerSuccessIsNoRetry) {
  Stream stream;
  const auto cached = stream.alloc(0, kGiB);
  stream.fail(10, 4 * kGiB);
  stream.free(10.1, cached);
  stream.alloc(10.2, kGiB);
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);

  EXPECT_EQ(classifier.retries(), 0u);
}

TEST(OomClassifier, OneSuccessSettlesRepeatedFailures) {
  Stream stream;
  const auto cached = stream.alloc(0, kGiB);
  stream.fail(10, kGiB);
  stream.fail(10.01, kGiB);
  stream.free(10.05, cached);
  stream.alloc(10.1, kGiB);
  stream.alloc(10.2, kGiB); // an ordinary allocation afterwards
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);

  EXPECT_EQ(classifier.retries(), 1u);
  EXPECT_EQ(classifier.oom_count(OomCause::capacity), 2u);
}

TEST(OomClassifier, ThreeRetriesWithinAMinuteAreAStorm) {
  Stream stream;
  OomClassifier classifier;
  for (const double t : {0.0, 20.0, 40.0}) {
    const auto cached = stream.alloc(t, kGiB);
    retry(stream, t + 1, kGiB, cached);
    classifier.observe(stream.take(), std::nullopt);
    if (t < 40) {
      EXPECT_FALSE(classifier.retry_storm(ns(t + 2))) << "after the retry at " << t + 1;
    }
  }

  EXPECT_EQ(classifier.retries(), 3u);
  EXPECT_TRUE(classifier.retry_storm(ns(42)));
  EXPECT_TRUE(classifier.retry_storm(ns(61.1))); // the first retry was at 1.1 s
  EXPECT_FALSE(classifier.retry_storm(ns(61.2)));
}

TEST(OomClassifier, SpreadOutRetriesAreNoStorm) {
  Stream stream;
  OomClassifier classifier;
  for (const double t : {0.0, 40.0, 80.0, 120.0}) {
    const auto cached = stream.alloc(t, kGiB);
    retry(stream, t + 1, kGiB, cached);
    classifier.observe(stream.take(), std::nullopt);
    EXPECT_FALSE(classifier.retry_storm(ns(t + 2))) << "after the retry at " << t + 1;
  }
  EXPECT_EQ(classifier.retries(), 4u);
}

TEST(OomClassifier, RatioFollowsTheLiveSegments) {
  Stream stream;
  OomClassifier classifier;
  EXPECT_EQ(classifier.fragmentation_ratio(), 0);
  EXPECT_EQ(classifier.largest_segment(), 0u);

  const auto big = stream.alloc(1, 3 * kGiB);
  classifier.observe(stream.take(), std::nullopt);
  EXPECT_EQ(classifier.fragmentation_ratio(), 0);

  stream.alloc(2, kGiB);
  classifier.observe(stream.take(), std::nullopt);
  EXPECT_DOUBLE_EQ(classifier.fragmentation_ratio(), 0.25);
  EXPECT_EQ(classifier.largest_segment(), 3 * kGiB);
  EXPECT_EQ(classifier.segment_count(), 2u);

  stream.free(3, big);
  classifier.observe(stream.take(), std::nullopt);
  EXPECT_EQ(classifier.fragmentation_ratio(), 0);
  EXPECT_EQ(classifier.largest_segment(), kGiB);
  EXPECT_EQ(classifier.segment_count(), 1u);
}

TEST(OomClassifier, UnknownFreesAreIgnored) {
  Stream stream;
  stream.alloc(1, kGiB);
  stream.free_unknown(2, 0x1234000);
  OomClassifier classifier;
  classifier.observe(stream.take(), std::nullopt);

  EXPECT_EQ(classifier.segment_count(), 1u);
  EXPECT_EQ(classifier.live_bytes(), kGiB);
  EXPECT_EQ(classifier.largest_segment(), kGiB);
}

TEST(OomClassifier, ReusedAddressReplacesTheSegment) {
  OomClassifier classifier;
  const std::vector<MemoryChange> changes = {
      {ns(1), MemoryChangeKind::allocation, 0x1000, kGiB, kGiB, 0},
      // The free of 0x1000 was lost; the driver handed the address out again.
      {ns(2), MemoryChangeKind::allocation, 0x1000, 2 * kMiB, kGiB + 2 * kMiB, 0},
  };
  classifier.observe(changes, std::nullopt);

  EXPECT_EQ(classifier.segment_count(), 1u);
  EXPECT_EQ(classifier.live_bytes(), 2 * kMiB);
  EXPECT_EQ(classifier.largest_segment(), 2 * kMiB);
}

TEST(OomClassifier, LiveSegmentsAreBounded) {
  FragmentationSettings settings;
  settings.max_live_segments = 2;
  Stream stream;
  for (int i = 0; i < 3; ++i)
    stream.alloc(i, kGiB);
  OomClassifier classifier(settings);
  classifier.observe(stream.take(), std::nullopt);

  EXPECT_EQ(classifier.segment_count(), 2u);
  EXPECT_EQ(classifier.live_bytes(), 2 * kGiB);
  EXPECT_EQ(classifier.untracked_segments(), 1u);
}

TEST(OomClassifier, CauseNames) {
  EXPECT_EQ(oom_cause_name(OomCause::capacity), "capacity");
  EXPECT_EQ(oom_cause_name(OomCause::fragmentation), "fragmentation");
}

} // namespace
} // namespace neutracer
