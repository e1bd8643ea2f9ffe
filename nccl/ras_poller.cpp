// SPDX-License-Identifier: Apache-2.0
#include "nccl/ras_poller.h"

#include <spdlog/spdlog.h>
#include <utility>

#include "common/enum_names.h"

namespace neutracer {

namespace {

constexpr std::array<std::string_view, kRasPollResults> kResultNames = {"ok", "no_answer",
                                                                        "bad_reply"};
static_assert(kResultNames.size() == enum_count(RasPollResult::bad_reply));

} // namespace

std::string_view ras_poll_result_name(RasPollResult result) {
  return enum_name(result, kResultNames);
}

RasPoller::RasPoller(RasPollerSettings settings, Query query)
    : settings_(std::move(settings)), query_(std::move(query)),
      thread_([this](const std::stop_token &stop) { run(stop); }) {}

RasPoller::~RasPoller() { request_stop(); }

void RasPoller::request_stop() {
  thread_.request_stop();
  wake_.notify_all();
}

void RasPoller::set_wanted(bool wanted) {
  {
    const std::lock_guard lock(mutex_);
    if (wanted_ == wanted)
      return;
    wanted_ = wanted;
    if (wanted) {
      ++rises_;
    } else {
      // The job left this node: its status is no longer news (nor is a dead rank of it).
      snapshot_.status.reset();
      snapshot_.last.reset();
      snapshot_.last_error.clear();
    }
  }
  wake_.notify_all();
}

RasSnapshot RasPoller::snapshot() const {
  const std::lock_guard lock(mutex_);
  return snapshot_;
}

void RasPoller::run(const std::stop_token &stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    if (!wake_.wait(lock, stop, [this] { return wanted_; }))
      return; // stopped
    // The next poll after the interval, or at once when wanted drops and rises again (even
    // while this one runs: a job restarted during a slow query).
    const auto rises = rises_;
    lock.unlock();
    poll();
    lock.lock();
    wake_.wait_for(lock, stop, settings_.interval,
                   [this, rises] { return rises_ != rises || !wanted_; });
  }
}

void RasPoller::poll() {
  const auto started = std::chrono::steady_clock::now();
  const auto reply = query_(settings_.address, settings_.timeout);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  std::shared_ptr<const RasStatus> status;
  RasPollResult result = RasPollResult::no_answer;
  std::string error = reply.error;
  if (reply.answered) {
    auto parsed = parse_ras_status(reply.text);
    result = parsed.status ? RasPollResult::ok : RasPollResult::bad_reply;
    if (parsed.status)
      status = std::make_shared<const RasStatus>(std::move(*parsed.status));
    error = parsed.error;
  }
  const std::lock_guard lock(mutex_);
  if (!wanted_)
    return; // the job left while the query ran: nothing of it to show
  // One line per change of result, not one per poll.
  if (snapshot_.last != result) {
    if (result == RasPollResult::ok)
      spdlog::info("NCCL RAS at {} answered: {} communicators", settings_.address,
                   status->communicators.size());
    else
      spdlog::info("NCCL RAS at {}: {}: {}", settings_.address, ras_poll_result_name(result),
                   error);
  }
  snapshot_.last = result;
  snapshot_.last_error = result == RasPollResult::ok ? "" : error;
  ++snapshot_.polls[static_cast<std::size_t>(result)];
  snapshot_.last_poll_seconds = took.count();
  snapshot_.status = std::move(status);
}

} // namespace neutracer
