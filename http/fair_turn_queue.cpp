// SPDX-License-Identifier: Apache-2.0
#include "http/fair_turn_queue.h"

#include <algorithm>

namespace neutracer {

FairTurnQueue::FairTurnQueue(FairTurnLimits limits) : limits_(limits) {
  limits_.slots = std::max<std::uint32_t>(limits_.slots, 1);
}

FairTurnQueue::Admission FairTurnQueue::arrive(const std::string &source) {
  const Ticket ticket = next_ticket_++;
  if (running_ < limits_.slots && source_of_.empty()) {
    ++running_;
    return {Arrival::running, ticket};
  }
  auto queue = queue_of_.find(source);
  const std::size_t own = queue == queue_of_.end() ? 0 : queue->second.size();
  if (source_of_.size() >= limits_.max_waiting || own >= limits_.max_waiting_per_source)
    return {Arrival::refused, ticket};
  if (queue == queue_of_.end()) {
    queue = queue_of_.emplace(source, std::deque<Ticket>()).first;
    rotation_.push_back(source); // a source new to the queue takes its turn after the others
  }
  queue->second.push_back(ticket);
  source_of_.emplace(ticket, source);
  return {Arrival::waiting, ticket};
}

std::optional<FairTurnQueue::Ticket> FairTurnQueue::finish() {
  if (running_ > 0)
    --running_;
  return grant_next();
}

bool FairTurnQueue::take_turn(Ticket ticket) { return granted_.erase(ticket) == 1; }

std::optional<FairTurnQueue::Ticket> FairTurnQueue::leave(Ticket ticket) {
  if (granted_.erase(ticket) == 1)
    return finish(); // it was given a slot it will not use
  const auto found = source_of_.find(ticket);
  if (found == source_of_.end())
    return std::nullopt;
  const auto queue = queue_of_.find(found->second);
  std::erase(queue->second, ticket);
  if (queue->second.empty()) {
    std::erase(rotation_, found->second);
    queue_of_.erase(queue);
  }
  source_of_.erase(found);
  return std::nullopt;
}

std::optional<FairTurnQueue::Ticket> FairTurnQueue::grant_next() {
  if (running_ >= limits_.slots || rotation_.empty())
    return std::nullopt;
  const std::string source = rotation_.front();
  rotation_.pop_front();
  const auto queue = queue_of_.find(source);
  const Ticket ticket = queue->second.front();
  queue->second.pop_front();
  if (queue->second.empty())
    queue_of_.erase(queue);
  else
    rotation_.push_back(source); // its next waiter comes after every other source's
  source_of_.erase(ticket);
  granted_.insert(ticket);
  ++running_;
  return ticket;
}

} // namespace neutracer
