// SPDX-License-Identifier: Apache-2.0
// PasswordCheckTurns with real threads, told apart by explicit signals, never by elapsed time.
#include "http/password_check_turns.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

namespace neutracer {
namespace {

using Clock = PasswordCheckTurns::Clock;

// Whether `condition` came true; false after 10 s, so a broken queue fails instead of hanging.
bool eventually(const std::function<bool()> &condition) {
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (!condition()) {
    if (Clock::now() > give_up)
      return false;
    std::this_thread::yield();
  }
  return true;
}

const Clock::time_point kFarAway = Clock::now() + std::chrono::hours(1);

TEST(PasswordCheckTurns, AWaiterGetsTheSlotWhenTheHolderFinishes) {
  PasswordCheckTurns turns({.slots = 1, .max_waiting = 4, .max_waiting_per_source = 4});
  auto held = turns.acquire("flood", kFarAway);
  ASSERT_TRUE(held);
  std::atomic<bool> got = false;
  std::jthread waiter([&] { got = turns.acquire("scraper", kFarAway).has_value(); });
  ASSERT_TRUE(eventually([&] { return turns.waiting() == 1; }));
  EXPECT_FALSE(got);
  held.reset();
  waiter.join();
  EXPECT_TRUE(got);
  EXPECT_EQ(turns.running(), 0u) << "the waiter's turn ended with its thread";
}

TEST(PasswordCheckTurns, APassedDeadlineOrAFullQueueIsRefusedAndLeavesNothingBehind) {
  PasswordCheckTurns turns({.slots = 1, .max_waiting = 1, .max_waiting_per_source = 1});
  auto held = turns.acquire("flood", kFarAway);
  ASSERT_TRUE(held);
  EXPECT_FALSE(turns.acquire("scraper", Clock::now() - std::chrono::seconds(1)));
  EXPECT_EQ(turns.waiting(), 0u);
  std::jthread waiter([&] { EXPECT_TRUE(turns.acquire("scraper", kFarAway)); });
  ASSERT_TRUE(eventually([&] { return turns.waiting() == 1; }));
  EXPECT_FALSE(turns.acquire("other", kFarAway)) << "the queue is full: refused at once";
  held.reset();
  waiter.join();
  EXPECT_EQ(turns.running(), 0u);
  EXPECT_TRUE(turns.acquire("other", Clock::now())) << "a free slot is taken without waiting";
}

} // namespace
} // namespace neutracer
