// SPDX-License-Identifier: Apache-2.0
#pragma once
// Converts CLOCK_MONOTONIC nanoseconds (the clock of the BPF programs' timestamps) to Unix time,
// from the two clocks read together: unix = unix_now - (monotonic_now - monotonic).
#include <cstdint>
#include <ctime>

#include "common/monotonic_clock.h"

namespace neutracer {

struct ClockOffset {
  double unix_now_seconds = 0;
  std::uint64_t monotonic_now_ns = 0;

  double to_unix(std::uint64_t monotonic_ns) const {
    return unix_now_seconds -
           (static_cast<double>(monotonic_now_ns) - static_cast<double>(monotonic_ns)) / 1e9;
  }

  static ClockOffset now() {
    timespec wall{};
    clock_gettime(CLOCK_REALTIME, &wall);
    return {static_cast<double>(wall.tv_sec) + static_cast<double>(wall.tv_nsec) / 1e9,
            monotonic_ns()};
  }
};

} // namespace neutracer
