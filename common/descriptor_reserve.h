// SPDX-License-Identifier: Apache-2.0
#pragma once
// Descriptors kept free for what must work at the limit: the scan's reads of /proc (a process's
// exit is only seen through them), the HTTP server's accept() and the journal. Whatever holds
// descriptors per traced process (BPF links, maps files) is opened only while a reserve is
// held, so it runs out first and the reserve is free again when the reserve is released.
#include <cstddef>
#include <vector>

#include "common/unique_fd.h"

namespace neutracer {

// The scan opens a few files at once, /healthz and /metrics one socket each: enough for both
// and for a few scrapers at the same time.
inline constexpr std::size_t kReservedDescriptors = 32;

// Holds `count` placeholder descriptors for as long as it lives (RAII: they are closed on
// destruction). full() says whether there were that many free; when not, it holds what it got,
// so that anything opened meanwhile fails at once instead of taking the last ones.
class DescriptorReserve {
public:
  explicit DescriptorReserve(std::size_t count = kReservedDescriptors);
  DescriptorReserve(const DescriptorReserve &) = delete;
  DescriptorReserve &operator=(const DescriptorReserve &) = delete;

  bool full() const { return held_.size() == count_; }
  std::size_t held() const { return held_.size(); }

private:
  std::size_t count_;
  std::vector<UniqueFd> held_;
};

} // namespace neutracer
