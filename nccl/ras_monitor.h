// SPDX-License-Identifier: Apache-2.0
#pragma once
// Follows NCCL's RAS event stream (`MONITOR`, NCCL 2.29 and later; docs/nccl.md, "RAS") off the
// scan: a thread of its own keeps one connection open while this node runs NCCL processes
// (set_wanted), counts the events by kind and keeps the processes NCCL declared dead. A server
// that does not know MONITOR (older NCCL) is not asked again until the next job; a stream that
// ends (the process serving it exited) or a port nobody listens on is tried again after `retry`.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace neutracer {

struct RasMonitorSettings {
  std::string address = "localhost:28028";
  std::chrono::milliseconds answer_timeout{5'000}; // to connect and to hear "OK"
  std::chrono::milliseconds retry{10'000};
};

enum class RasMonitorState { off, no_answer, unsupported, following };
std::string_view ras_monitor_state_name(RasMonitorState state);

struct RasDeadPeer {
  std::string host;
  int pid = -1;
  bool operator==(const RasDeadPeer &) const = default;
};

// Bounds: a hostile or broken server cannot grow the daemon.
inline constexpr std::size_t kRasMaxEventKinds = 32; // with "other", where more go
inline constexpr std::size_t kRasMaxDeadPeers = 64;  // the latest are kept
inline constexpr std::size_t kRasMaxEventLine = 4096;

struct RasMonitorSnapshot {
  RasMonitorState state = RasMonitorState::off;
  std::map<std::string, std::uint64_t> events; // by kind, over the daemon's life
  std::vector<RasDeadPeer> dead;               // this job's, oldest first
};

class RasMonitor {
public:
  explicit RasMonitor(RasMonitorSettings settings);
  // Stops the thread: it notices within 200 ms, connecting or reading.
  ~RasMonitor();
  RasMonitor(const RasMonitor &) = delete;
  RasMonitor &operator=(const RasMonitor &) = delete;

  // Follows only while wanted; when wanted falls the job's dead peers are dropped.
  void set_wanted(bool wanted);
  // Asks the thread to stop now (the destructor waits for it): an owner stops several at once.
  void request_stop();
  RasMonitorSnapshot snapshot() const;

private:
  enum class Ended { closed, unsupported, unwanted };
  void run(const std::stop_token &stop);
  Ended follow(const std::stop_token &stop, std::uint64_t rises);
  bool wanted_since(std::uint64_t rises) const; // wanted, and not dropped since `rises`
  void set_state(RasMonitorState state, std::string_view why);
  void event_line(std::string_view line, std::uint64_t rises);

  const RasMonitorSettings settings_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  bool wanted_ = false;
  std::uint64_t rises_ = 0;
  RasMonitorSnapshot snapshot_;
  std::size_t deaths_logged_ = 0; // this job's; more are counted, not logged
  std::jthread thread_;           // last: started once the rest is built
};

} // namespace neutracer
