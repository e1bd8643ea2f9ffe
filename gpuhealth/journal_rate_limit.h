// SPDX-License-Identifier: Apache-2.0
#pragma once
// At most `per_minute` entries in any 60 s window; the rest are counted, not written, so a
// flood of driver reports (an Xid 13 per kernel launch) cannot flood the journal. Pure.
#include <cstdint>
#include <deque>

namespace neutracer {

class JournalRateLimit {
public:
  explicit JournalRateLimit(std::uint32_t per_minute) : per_minute_(per_minute) {}

  // Whether an entry may be written at `now_ns` (a monotonic clock); counts it if not.
  bool allow(std::uint64_t now_ns) {
    constexpr std::uint64_t kMinute = 60'000'000'000ull;
    while (!sent_.empty() && sent_.front() + kMinute <= now_ns)
      sent_.pop_front();
    if (sent_.size() >= per_minute_) {
      ++suppressed_;
      return false;
    }
    sent_.push_back(now_ns);
    return true;
  }
  std::uint64_t suppressed() const { return suppressed_; }

private:
  std::uint32_t per_minute_;
  std::deque<std::uint64_t> sent_;
  std::uint64_t suppressed_ = 0;
};

} // namespace neutracer
