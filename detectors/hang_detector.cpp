// SPDX-License-Identifier: Apache-2.0
#include "detectors/hang_detector.h"

#include <algorithm>

#include "common/enum_names.h"

namespace neutracer {
namespace {

// Enough CPU readings to place the start of the judged span within 1/64 of its length.
constexpr std::uint64_t kReadingsPerSpan = 64;

} // namespace

constexpr std::array<std::string_view, 3> kHangReasonNames = {"none", "call_in_progress",
                                                              "launches_stalled"};
static_assert(kHangReasonNames.size() == enum_count(HangReason::launches_stalled));

std::string_view hang_reason_name(HangReason reason) { return enum_name(reason, kHangReasonNames); }

HangDetector::HangDetector(HangSettings settings)
    : settings_(settings), stalled_launch_ns_(static_cast<std::uint64_t>(
                               std::max(0.0, settings.stalled_launch_seconds) * 1e9)) {}

HangVerdict HangDetector::evaluate(const HangSample &sample) {
  if (!last_launches_ || sample.launches_total != *last_launches_) {
    // A lower count is a reset of the counter, not a launch.
    if (last_launches_ && sample.launches_total > *last_launches_)
      launched_while_observed_ = true;
    last_launches_ = sample.launches_total;
    last_launch_change_ns_ = sample.now_ns;
    cpu_readings_.clear();
  }

  HangVerdict verdict;
  if (sample.longest_call_seconds >= settings_.call_seconds) {
    verdict.suspected = true;
    verdict.reason = HangReason::call_in_progress;
    verdict.stalled_seconds = sample.longest_call_seconds;
    verdict.call_api = sample.call_api;
    // Still record the CPU reading below so a later stall is judged on complete data.
  }

  const bool busy = busy_over_last(stalled_launch_ns_, sample);
  if (verdict.suspected)
    return verdict;

  const std::uint64_t stalled_ns =
      sample.now_ns > last_launch_change_ns_ ? sample.now_ns - last_launch_change_ns_ : 0;
  if (launched_while_observed_ && sample.launches_total > 0 && sample.gpu_bytes_in_use > 0 &&
      stalled_ns >= stalled_launch_ns_ && busy) {
    verdict.suspected = true;
    verdict.reason = HangReason::launches_stalled;
    verdict.stalled_seconds = static_cast<double>(stalled_ns) / 1e9;
  }
  return verdict;
}

bool HangDetector::busy_over_last(std::uint64_t span_ns, const HangSample &sample) {
  // CPU use is judged over the last span of the stall, not all of it: a server idle for an hour
  // that then hangs must not need another hour of spinning to raise its average.
  const std::uint64_t spacing = std::max<std::uint64_t>(1, span_ns / kReadingsPerSpan);
  if (cpu_readings_.empty() || sample.now_ns >= cpu_readings_.back().time_ns + spacing)
    cpu_readings_.push_back(CpuReading{sample.now_ns, sample.cpu_seconds_total});

  const std::uint64_t span_start = sample.now_ns >= span_ns ? sample.now_ns - span_ns : 0;
  std::size_t stale = 0;
  while (cpu_readings_.size() - stale >= 2 && cpu_readings_[stale + 1].time_ns <= span_start)
    ++stale;
  cpu_readings_.erase(cpu_readings_.begin(),
                      cpu_readings_.begin() + static_cast<std::ptrdiff_t>(stale));

  const CpuReading &start = cpu_readings_.front();
  if (start.time_ns > span_start || sample.now_ns <= start.time_ns)
    return false; // the stall does not cover the span yet
  const double elapsed = static_cast<double>(sample.now_ns - start.time_ns) / 1e9;
  return (sample.cpu_seconds_total - start.cpu_seconds) / elapsed >= settings_.busy_cpu_fraction;
}

} // namespace neutracer
