// SPDX-License-Identifier: Apache-2.0
#pragma once
// Admits at most N requests at a time and refuses the rest at once, so a burst of scrapes
// never queues behind a slow one.
#include <atomic>
#include <cstdint>
#include <optional>

#include "common/lent_hold.h"

namespace neutracer {

class ConcurrencyLimiter {
  static void give_back(std::atomic<std::uint32_t> &in_use) { in_use.fetch_sub(1); }

public:
  // Holds one admission; gives it back when destroyed.
  using Slot = LentHold<std::atomic<std::uint32_t>, &ConcurrencyLimiter::give_back>;

  explicit ConcurrencyLimiter(std::uint32_t limit) : limit_(limit) {}

  // A slot, or nullopt when `limit` slots are already held. Never waits.
  std::optional<Slot> try_acquire() {
    std::uint32_t current = in_use_.load();
    do {
      if (current >= limit_)
        return std::nullopt;
    } while (!in_use_.compare_exchange_weak(current, current + 1));
    return std::optional<Slot>(std::in_place, in_use_);
  }

  std::uint32_t in_use() const { return in_use_.load(); }
  std::uint32_t limit() const { return limit_; }

private:
  const std::uint32_t limit_;
  std::atomic<std::uint32_t> in_use_{0};
};

} // namespace neutracer
