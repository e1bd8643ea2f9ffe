// SPDX-License-Identifier: Apache-2.0
// RasMonitor against a stand-in RAS server on 127.0.0.1 that answers MONITOR as NCCL 2.29 does
// (OK, then event lines) or as older releases do (ERROR: Unknown command).
#include "nccl/ras_monitor.h"

#include <atomic>
#include <gtest/gtest.h>
#include <mutex>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "loopback_listener.h"

namespace neutracer {
namespace {

using namespace std::chrono_literals;

// Serves one connection at a time: reads the client's command line, sends `reply`, then waits
// until the client hangs up, or hangs up itself when `close_after_reply`.
class FakeRasStream {
public:
  explicit FakeRasStream(std::string reply, bool close_after_reply = false)
      : reply_(std::move(reply)), close_after_reply_(close_after_reply) {
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeRasStream() {
    stop_ = true;
    thread_.join();
  }
  std::string address() const { return listener_.address(); }
  int connections() const { return connections_; }
  std::string commands() const {
    const std::lock_guard lock(mutex_);
    return commands_;
  }

private:
  bool readable(int fd) const {
    pollfd entry{fd, POLLIN, 0};
    return ::poll(&entry, 1, 20) > 0;
  }
  void serve() {
    while (!stop_) {
      if (!readable(listener_.fd()))
        continue;
      const int fd = ::accept(listener_.fd(), nullptr, nullptr);
      if (fd < 0)
        continue;
      ++connections_;
      std::string received;
      char buffer[256];
      while (!stop_ && received.find('\n') == std::string::npos) {
        if (!readable(fd))
          continue;
        const auto n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0)
          break;
        received.append(buffer, static_cast<std::size_t>(n));
      }
      {
        const std::lock_guard lock(mutex_);
        commands_ += received;
      }
      ::send(fd, reply_.data(), reply_.size(), MSG_NOSIGNAL);
      while (!stop_ && !close_after_reply_)
        if (readable(fd) && ::recv(fd, buffer, sizeof buffer, 0) <= 0)
          break; // the client hung up
      ::close(fd);
    }
  }

  std::string reply_;
  bool close_after_reply_;
  test::LoopbackListener listener_;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  mutable std::mutex mutex_;
  std::string commands_;
  std::thread thread_;
};

template <typename Condition> bool eventually(Condition done) {
  for (int i = 0; i < 1000 && !done(); ++i)
    std::this_thread::sleep_for(10ms);
  return done();
}

RasMonitorSettings monitor_of(const FakeRasStream &server, std::chrono::milliseconds retry) {
  RasMonitorSettings settings;
  settings.address = server.address();
  settings.answer_timeout = 2s;
  settings.retry = retry;
  return settings;
}

constexpr const char *kEvents =
    "OK\n"
    "[2026-11-30 12:00:01] PEER_NEW: Process 42 on node 10.0.0.2 managing GPU 0 \n"
    "[2026-11-30 12:01:07] PEER_DEAD: Process 42 on node 10.0.0.2 managing GPU 0 \n"
    "[2026-11-30 12:01:07] PEER_DEAD: Process 42 on node 10.0.0.2 managing GPU 0 \n"
    "[2026-11-30 12:01:08] PEER_DEAD: Process 43 on node 10.0.0.3 managing GPU 1 \r\n";

TEST(RasMonitor, FollowsTheStreamOnceWantedCountsEventsAndKeepsTheDead) {
  FakeRasStream server(kEvents);
  RasMonitor monitor(monitor_of(server, 1h));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(server.connections(), 0) << "no NCCL process here yet: nobody is asked";
  EXPECT_EQ(monitor.snapshot().state, RasMonitorState::off);
  monitor.set_wanted(true);
  ASSERT_TRUE(eventually([&] { return monitor.snapshot().dead.size() == 2; }));
  const auto snapshot = monitor.snapshot();
  EXPECT_EQ(server.commands(), "MONITOR\n");
  EXPECT_EQ(snapshot.state, RasMonitorState::following);
  EXPECT_EQ(snapshot.events.at("PEER_NEW"), 1u);
  EXPECT_EQ(snapshot.events.at("PEER_DEAD"), 3u);
  EXPECT_EQ(snapshot.dead, (std::vector<RasDeadPeer>{{"10.0.0.2", 42}, {"10.0.0.3", 43}}))
      << "one entry per process, however often it is told";
  // The job leaves: its dead go, the counts stay, the connection closes.
  monitor.set_wanted(false);
  EXPECT_EQ(monitor.snapshot().state, RasMonitorState::off);
  EXPECT_TRUE(monitor.snapshot().dead.empty());
  EXPECT_EQ(monitor.snapshot().events.at("PEER_DEAD"), 3u);
  EXPECT_EQ(server.connections(), 1);
}

TEST(RasMonitor, AStreamThatEndsIsFollowedAgainAfterTheRetry) {
  FakeRasStream server("OK\n", true); // the process serving it exits
  RasMonitor monitor(monitor_of(server, 50ms));
  monitor.set_wanted(true);
  ASSERT_TRUE(eventually([&] { return server.connections() >= 3; }));
}

TEST(RasMonitor, AnOlderNcclIsNotAskedAgainUntilTheNextJob) {
  FakeRasStream server("ERROR: Unknown command MONITOR\n");
  RasMonitor monitor(monitor_of(server, 20ms));
  monitor.set_wanted(true);
  ASSERT_TRUE(eventually([&] { return monitor.snapshot().state == RasMonitorState::unsupported; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(server.connections(), 1) << "ten retries' time, no second question";
  monitor.set_wanted(false);
  monitor.set_wanted(true);
  ASSERT_TRUE(eventually([&] { return server.connections() == 2; }));
}

TEST(RasMonitor, NothingListeningIsNoAnswer) {
  RasMonitorSettings settings;
  settings.address = test::LoopbackListener().address(); // closed at once: refused
  settings.retry = 1h;
  RasMonitor monitor(settings);
  monitor.set_wanted(true);
  ASSERT_TRUE(eventually([&] { return monitor.snapshot().state == RasMonitorState::no_answer; }));
}

TEST(RasMonitor, ALineOverTheBoundDropsTheConnectionAndGrowsNothing) {
  FakeRasStream server("OK\n[x] PEER_NEW: " + std::string(3 * kRasMaxEventLine, 'a'));
  RasMonitor monitor(monitor_of(server, 1h));
  monitor.set_wanted(true);
  ASSERT_TRUE(eventually([&] { return monitor.snapshot().state == RasMonitorState::no_answer; }));
  EXPECT_TRUE(monitor.snapshot().events.empty());
}

TEST(RasMonitor, EventKindsAndDeadProcessesAreBounded) {
  std::string reply = "OK\n";
  for (int i = 0; i < 100; ++i)
    reply += "[x] KIND_" + std::to_string(i) + ": \n";
  for (int pid = 1; pid <= 100; ++pid)
    reply += "[x] PEER_DEAD: Process " + std::to_string(pid) + " on node 10.0.0.1 managing GPU 0\n";
  FakeRasStream server(reply);
  RasMonitor monitor(monitor_of(server, 1h));
  monitor.set_wanted(true);
  ASSERT_TRUE(eventually([&] {
    const auto snapshot = monitor.snapshot();
    return !snapshot.dead.empty() && snapshot.dead.back().pid == 100;
  }));
  const auto snapshot = monitor.snapshot();
  EXPECT_LE(snapshot.events.size(), kRasMaxEventKinds);
  EXPECT_EQ(snapshot.events.at("PEER_DEAD"), 100u) << "NCCL's lifecycle kinds are always named";
  EXPECT_EQ(snapshot.events.at("other"), 100u - (kRasMaxEventKinds - 3));
  EXPECT_EQ(snapshot.dead.size(), kRasMaxDeadPeers);
  EXPECT_EQ(snapshot.dead.front().pid, 100 - static_cast<int>(kRasMaxDeadPeers) + 1)
      << "the latest are kept";
}

} // namespace
} // namespace neutracer
