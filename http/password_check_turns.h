// SPDX-License-Identifier: Apache-2.0
#pragma once
// Waiting for a bcrypt slot: a request whose credentials are not cached waits its fair turn
// (FairTurnQueue) for at most a deadline, instead of being refused while a password-guessing
// flood keeps the slots busy. The queue is bounded, so waiting threads (civetweb workers) are
// too, and nothing else (/healthz, cached scrapes) ever waits here. Thread-safe.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "common/lent_hold.h"
#include "http/fair_turn_queue.h"

namespace neutracer {

class PasswordCheckTurns {
  // A Turn's end: its slot goes to the next waiter.
  void finish();

public:
  using Clock = std::chrono::steady_clock;

  // Holds one slot; gives it to the next waiter when destroyed.
  using Turn = LentHold<PasswordCheckTurns, &PasswordCheckTurns::finish>;

  explicit PasswordCheckTurns(FairTurnLimits limits) : queue_(limits) {}

  // A slot for a request from `source` (its address), or nullopt when the queue is full (at
  // once) or `deadline` passes first.
  std::optional<Turn> acquire(const std::string &source, Clock::time_point deadline);

  std::size_t waiting() const;
  std::uint32_t running() const;

private:
  mutable std::mutex mutex_;
  std::condition_variable granted_;
  FairTurnQueue queue_;
};

} // namespace neutracer
