// SPDX-License-Identifier: Apache-2.0
#include "http/password_check_turns.h"

namespace neutracer {

std::optional<PasswordCheckTurns::Turn> PasswordCheckTurns::acquire(const std::string &source,
                                                                    Clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  const auto admission = queue_.arrive(source);
  switch (admission.arrival) {
  case FairTurnQueue::Arrival::running:
    return std::optional<Turn>(std::in_place, *this);
  case FairTurnQueue::Arrival::refused:
    return std::nullopt;
  case FairTurnQueue::Arrival::waiting:
    break;
  }
  // Every waiter wakes on each grant and checks its own ticket: a few dozen at most.
  if (granted_.wait_until(lock, deadline, [&] { return queue_.take_turn(admission.ticket); }))
    return std::optional<Turn>(std::in_place, *this);
  if (queue_.leave(admission.ticket))
    granted_.notify_all(); // the slot it was given just now goes to the next waiter
  return std::nullopt;
}

void PasswordCheckTurns::finish() {
  std::lock_guard lock(mutex_);
  if (queue_.finish())
    granted_.notify_all();
}

std::size_t PasswordCheckTurns::waiting() const {
  std::lock_guard lock(mutex_);
  return queue_.waiting();
}

std::uint32_t PasswordCheckTurns::running() const {
  std::lock_guard lock(mutex_);
  return queue_.running();
}

} // namespace neutracer
