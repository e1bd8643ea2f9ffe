// SPDX-License-Identifier: Apache-2.0
#pragma once
// Who gets the next of a few slots (bcrypt checks) when requests from several sources wait for
// one: sources take turns round-robin, and each source's requests go first in, first out. Pure
// bookkeeping, no threads and no clock: PasswordCheckTurns adds the waiting and the deadlines.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace neutracer {

struct FairTurnLimits {
  std::uint32_t slots = 1;                 // turns running at once (at least 1)
  std::size_t max_waiting = 64;            // waiters in all; more are refused at once
  std::size_t max_waiting_per_source = 32; // so one source cannot fill the whole queue
};

class FairTurnQueue {
public:
  using Ticket = std::uint64_t;
  enum class Arrival { running, waiting, refused };
  struct Admission {
    Arrival arrival;
    Ticket ticket; // meaningful unless refused
  };

  explicit FairTurnQueue(FairTurnLimits limits);

  // A request from `source`: it runs at once when a slot is free and nobody waits; it waits when
  // both the queue and the source's share of it have room; otherwise it is refused.
  Admission arrive(const std::string &source);
  // A running turn ended: its slot goes to the next waiter, whose ticket is returned.
  std::optional<Ticket> finish();
  // Whether the waiting `ticket` has been given a slot; true only once (it now runs).
  bool take_turn(Ticket ticket);
  // A waiter gives up (its deadline passed). When a slot had been given to it meanwhile, the
  // slot passes on: the ticket that got it is returned.
  std::optional<Ticket> leave(Ticket ticket);

  std::size_t waiting() const { return source_of_.size(); }
  std::uint32_t running() const { return running_; }

private:
  // Gives a free slot to the first waiter of the source whose turn it is.
  std::optional<Ticket> grant_next();

  FairTurnLimits limits_;
  Ticket next_ticket_ = 1;
  std::uint32_t running_ = 0;        // slots taken, granted tickets not yet taken included
  std::deque<std::string> rotation_; // sources with waiters, next first
  std::map<std::string, std::deque<Ticket>> queue_of_; // each source's waiters, oldest first
  std::map<Ticket, std::string> source_of_;            // every waiter's source
  std::set<Ticket> granted_;                           // given a slot, not yet taken
};

} // namespace neutracer
