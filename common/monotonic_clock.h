// SPDX-License-Identifier: Apache-2.0
#pragma once
// CLOCK_MONOTONIC in nanoseconds: the clock of bpf_ktime_get_ns, so times read here and in the
// BPF programs compare directly.
#include <cstdint>
#include <ctime>

namespace neutracer {

inline std::uint64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000ull +
         static_cast<std::uint64_t>(now.tv_nsec);
}

} // namespace neutracer
