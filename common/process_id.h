// SPDX-License-Identifier: Apache-2.0
#pragma once
// A process for the life of the boot: a PID alone is reused, PID plus start time is not.
#include <compare>
#include <cstdint>

namespace neutracer {

struct ProcessId {
  int pid = 0;
  std::uint64_t start_ticks = 0; // together with pid, unique for the life of the boot
  auto operator<=>(const ProcessId &) const = default;
};

} // namespace neutracer
