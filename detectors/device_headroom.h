// SPDX-License-Identifier: Apache-2.0
#pragma once
// The free memory of a process's GPU at one reading (NVML, at the previous scan) and the
// process's own GPU bytes in use at that moment. Free memory at a later moment is estimated from
// the process's own change since: what it allocated came out of the free memory, what it freed
// went back. Other processes' changes since the reading are not seen.
//
// Why the previous scan's reading: a framework that hits out-of-memory frees its cache and
// retries, so a reading taken after the failure shows room that was not there when it failed.
#include <cstdint>

namespace neutracer {

struct DeviceHeadroom {
  std::uint64_t free_bytes = 0;
  std::uint64_t process_bytes = 0;

  std::uint64_t free_at(std::uint64_t process_bytes_now) const {
    const auto available = free_bytes + process_bytes;
    return process_bytes_now >= available ? 0 : available - process_bytes_now;
  }
};

} // namespace neutracer
