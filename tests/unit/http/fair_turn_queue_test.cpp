// SPDX-License-Identifier: Apache-2.0
#include "http/fair_turn_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace neutracer {
namespace {

using Arrival = FairTurnQueue::Arrival;
using Ticket = FairTurnQueue::Ticket;

// Finishes the running turn `count` times and returns who got the slot each time.
std::vector<Ticket> serve(FairTurnQueue &queue, int count) {
  std::vector<Ticket> order;
  for (int i = 0; i < count; ++i) {
    const auto next = queue.finish();
    if (!next)
      break;
    EXPECT_TRUE(queue.take_turn(*next));
    order.push_back(*next);
  }
  return order;
}

TEST(FairTurnQueue, RunsAtOnceWhileASlotIsFreeThenWaits) {
  FairTurnQueue queue({.slots = 2, .max_waiting = 4, .max_waiting_per_source = 4});
  EXPECT_EQ(queue.arrive("a").arrival, Arrival::running);
  EXPECT_EQ(queue.arrive("b").arrival, Arrival::running);
  const auto third = queue.arrive("a");
  EXPECT_EQ(third.arrival, Arrival::waiting);
  EXPECT_EQ(queue.running(), 2u);
  EXPECT_EQ(queue.waiting(), 1u);
  EXPECT_FALSE(queue.take_turn(third.ticket)) << "no slot came free yet";
  EXPECT_EQ(queue.finish(), third.ticket);
  EXPECT_TRUE(queue.take_turn(third.ticket));
  EXPECT_FALSE(queue.take_turn(third.ticket)) << "a turn is taken once";
  EXPECT_EQ(queue.waiting(), 0u);
  EXPECT_EQ(queue.running(), 2u);
  EXPECT_EQ(queue.finish(), std::nullopt);
  EXPECT_EQ(queue.running(), 1u);
}

TEST(FairTurnQueue, SourcesTakeTurnsAndEachSourceIsFirstInFirstOut) {
  FairTurnQueue queue({.slots = 1, .max_waiting = 16, .max_waiting_per_source = 16});
  ASSERT_EQ(queue.arrive("flood").arrival, Arrival::running);
  std::vector<Ticket> flood;
  for (int i = 0; i < 4; ++i)
    flood.push_back(queue.arrive("flood").ticket);
  const Ticket scraper = queue.arrive("scraper").ticket; // came last, behind four guesses
  const Ticket other = queue.arrive("other").ticket;
  const Ticket flood_late = queue.arrive("flood").ticket;
  EXPECT_EQ(serve(queue, 8), (std::vector<Ticket>{flood[0], scraper, other, flood[1], flood[2],
                                                  flood[3], flood_late}));
}

TEST(FairTurnQueue, ASourceThatComesBackQueuesBehindTheOthers) {
  FairTurnQueue queue({.slots = 1, .max_waiting = 16, .max_waiting_per_source = 16});
  ASSERT_EQ(queue.arrive("a").arrival, Arrival::running);
  const Ticket b1 = queue.arrive("b").ticket;
  const Ticket a1 = queue.arrive("a").ticket;
  EXPECT_EQ(serve(queue, 1), std::vector<Ticket>{b1});
  const Ticket b2 = queue.arrive("b").ticket;
  const Ticket c1 = queue.arrive("c").ticket;
  EXPECT_EQ(serve(queue, 4), (std::vector<Ticket>{a1, b2, c1}));
}

TEST(FairTurnQueue, TheQueueAndEachSourcesShareOfItAreBounded) {
  FairTurnQueue queue({.slots = 1, .max_waiting = 3, .max_waiting_per_source = 2});
  ASSERT_EQ(queue.arrive("flood").arrival, Arrival::running);
  EXPECT_EQ(queue.arrive("flood").arrival, Arrival::waiting);
  EXPECT_EQ(queue.arrive("flood").arrival, Arrival::waiting);
  EXPECT_EQ(queue.arrive("flood").arrival, Arrival::refused) << "its share is full";
  EXPECT_EQ(queue.arrive("scraper").arrival, Arrival::waiting) << "others still get in";
  EXPECT_EQ(queue.arrive("third").arrival, Arrival::refused) << "the queue is full";
  EXPECT_EQ(queue.waiting(), 3u);
  EXPECT_EQ(queue.running(), 1u);
}

TEST(FairTurnQueue, NoRoomToWaitRefusesWhileTheSlotIsTaken) {
  FairTurnQueue queue({.slots = 1, .max_waiting = 0, .max_waiting_per_source = 0});
  ASSERT_EQ(queue.arrive("a").arrival, Arrival::running);
  EXPECT_EQ(queue.arrive("b").arrival, Arrival::refused);
  EXPECT_EQ(queue.finish(), std::nullopt);
  EXPECT_EQ(queue.arrive("b").arrival, Arrival::running);
}

TEST(FairTurnQueue, AWaiterThatLeavesIsSkipped) {
  FairTurnQueue queue({.slots = 1, .max_waiting = 8, .max_waiting_per_source = 8});
  ASSERT_EQ(queue.arrive("a").arrival, Arrival::running);
  const Ticket a1 = queue.arrive("a").ticket;
  const Ticket b1 = queue.arrive("b").ticket;
  const Ticket a2 = queue.arrive("a").ticket;
  EXPECT_EQ(queue.leave(a1), std::nullopt);
  EXPECT_EQ(queue.leave(b1), std::nullopt) << "b has no waiter left";
  EXPECT_EQ(queue.waiting(), 1u);
  EXPECT_EQ(serve(queue, 2), std::vector<Ticket>{a2});
  EXPECT_EQ(queue.leave(a1), std::nullopt) << "leaving twice changes nothing";
}

TEST(FairTurnQueue, ASlotGivenToAWaiterThatLeavesPassesOn) {
  FairTurnQueue queue({.slots = 1, .max_waiting = 8, .max_waiting_per_source = 8});
  ASSERT_EQ(queue.arrive("a").arrival, Arrival::running);
  const Ticket late = queue.arrive("b").ticket;
  const Ticket next = queue.arrive("c").ticket;
  ASSERT_EQ(queue.finish(), late);
  // Its deadline passed before it saw the grant: the slot goes on, it is not lost.
  EXPECT_EQ(queue.leave(late), next);
  EXPECT_FALSE(queue.take_turn(late));
  EXPECT_TRUE(queue.take_turn(next));
  EXPECT_EQ(queue.running(), 1u);
  EXPECT_EQ(queue.finish(), std::nullopt);
  EXPECT_EQ(queue.running(), 0u);
}

} // namespace
} // namespace neutracer
