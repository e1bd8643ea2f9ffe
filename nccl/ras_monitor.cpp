// SPDX-License-Identifier: Apache-2.0
#include "nccl/ras_monitor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <poll.h>
#include <sys/socket.h>
#include <utility>

#include "common/enum_names.h"
#include "nccl/ras_connection.h"
#include "nccl/ras_events.h"

namespace neutracer {
namespace {

constexpr std::array<std::string_view, 4> kStateNames = {"off", "no_answer", "unsupported",
                                                         "following"};
static_assert(kStateNames.size() == enum_count(RasMonitorState::following));

// How often a quiet stream looks at stop and wanted.
constexpr std::chrono::milliseconds kTick{200};

} // namespace

std::string_view ras_monitor_state_name(RasMonitorState state) {
  return enum_name(state, kStateNames);
}

RasMonitor::RasMonitor(RasMonitorSettings settings)
    : settings_(std::move(settings)), thread_([this](const std::stop_token &stop) { run(stop); }) {}

RasMonitor::~RasMonitor() { request_stop(); }

void RasMonitor::request_stop() {
  thread_.request_stop();
  wake_.notify_all();
}

void RasMonitor::set_wanted(bool wanted) {
  {
    const std::lock_guard lock(mutex_);
    if (wanted_ == wanted)
      return;
    wanted_ = wanted;
    if (wanted)
      ++rises_;
    else
      snapshot_.state = RasMonitorState::off;
    // A job that left, or a new one: the last job's dead peers are no news.
    snapshot_.dead.clear();
    deaths_logged_ = 0;
  }
  wake_.notify_all();
}

RasMonitorSnapshot RasMonitor::snapshot() const {
  const std::lock_guard lock(mutex_);
  return snapshot_;
}

bool RasMonitor::wanted_since(std::uint64_t rises) const {
  const std::lock_guard lock(mutex_);
  return wanted_ && rises_ == rises;
}

void RasMonitor::run(const std::stop_token &stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    if (!wake_.wait(lock, stop, [this] { return wanted_; }))
      return; // stopped
    const auto rises = rises_;
    lock.unlock();
    const auto ended = follow(stop, rises);
    lock.lock();
    if (ended == Ended::unsupported) // this job's NCCL will not learn MONITOR: the next job's may
      wake_.wait(lock, stop, [this, rises] { return rises_ != rises; });
    else
      wake_.wait_for(lock, stop, settings_.retry,
                     [this, rises] { return rises_ != rises || !wanted_; });
  }
}

RasMonitor::Ended RasMonitor::follow(const std::stop_token &stop, std::uint64_t rises) {
  const auto answer_deadline = RasClock::now() + settings_.answer_timeout;
  std::string error;
  const auto fd = connect_ras(settings_.address, answer_deadline, error, stop);
  if (!fd || !send_all(fd.get(), "MONITOR\n", answer_deadline)) {
    set_state(RasMonitorState::no_answer, fd ? "send failed" : error);
    return Ended::closed;
  }
  bool answered = false;
  std::string pending;
  char buffer[4096];
  while (!stop.stop_requested() && wanted_since(rises)) {
    if (!answered && RasClock::now() >= answer_deadline) {
      set_state(RasMonitorState::no_answer, "no answer to MONITOR");
      return Ended::closed;
    }
    if (!wait_for_socket(fd.get(), POLLIN, RasClock::now() + kTick))
      continue;
    const auto n = ::recv(fd.get(), buffer, sizeof buffer, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n <= 0) {
      set_state(RasMonitorState::no_answer, n == 0 ? "the stream ended" : "receive failed");
      return Ended::closed;
    }
    pending.append(buffer, static_cast<std::size_t>(n));
    std::size_t start = 0;
    for (auto end = pending.find('\n'); end != std::string::npos;
         start = end + 1, end = pending.find('\n', start)) {
      std::string_view line(pending.data() + start, end - start);
      if (line.ends_with('\r'))
        line.remove_suffix(1);
      if (answered) {
        event_line(line, rises);
      } else if (line == "OK") {
        answered = true;
        set_state(RasMonitorState::following, "");
      } else if (line.starts_with("ERROR")) {
        set_state(RasMonitorState::unsupported, line);
        return Ended::unsupported;
      }
    }
    pending.erase(0, start);
    if (pending.size() > kRasMaxEventLine) {
      set_state(RasMonitorState::no_answer, "a line over 4 KiB");
      return Ended::closed;
    }
  }
  return Ended::unwanted;
}

void RasMonitor::set_state(RasMonitorState state, std::string_view why) {
  const std::lock_guard lock(mutex_);
  if (!wanted_)
    return; // the job left meanwhile: stay off
  // One line per change, not one per retry.
  if (snapshot_.state != state) {
    if (state == RasMonitorState::following)
      spdlog::info("NCCL RAS at {}: following its events", settings_.address);
    else
      spdlog::info("NCCL RAS at {}: events {}: {}", settings_.address,
                   ras_monitor_state_name(state), why);
  }
  snapshot_.state = state;
}

void RasMonitor::event_line(std::string_view line, std::uint64_t rises) {
  const auto event = parse_ras_event(line);
  if (!event)
    return;
  const std::lock_guard lock(mutex_);
  if (!wanted_ || rises_ != rises)
    return; // read after the job left: neither its news nor the next job's
  // NCCL's lifecycle kinds are always named; other kinds until the bound, then "other".
  auto &events = snapshot_.events;
  const bool lifecycle = event->event == "PEER_DEAD" || event->event == "PEER_NEW";
  const bool named =
      lifecycle || events.contains(event->event) || events.size() + 3 < kRasMaxEventKinds;
  ++events[named ? event->event : std::string("other")];
  if (event->event != "PEER_DEAD" || event->pid <= 0)
    return;
  const RasDeadPeer peer{event->host, event->pid};
  if (std::find(snapshot_.dead.begin(), snapshot_.dead.end(), peer) != snapshot_.dead.end())
    return; // told again (every process that hears of a death passes it on)
  // Bounded for a hostile stream; the series keep counting.
  constexpr std::size_t kDeathsLogged = 16;
  if (deaths_logged_ < kDeathsLogged)
    spdlog::warn("NCCL RAS: process {} on node {} declared dead{}", event->pid, event->host,
                 ++deaths_logged_ == kDeathsLogged ? " (further deaths of this job are not logged)"
                                                   : "");
  snapshot_.dead.push_back(peer);
  if (snapshot_.dead.size() > kRasMaxDeadPeers)
    snapshot_.dead.erase(snapshot_.dead.begin());
}

} // namespace neutracer
