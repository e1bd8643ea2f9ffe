// SPDX-License-Identifier: Apache-2.0
#pragma once
// Asks NCCL's RAS service for its status off the scan (docs/nccl.md, "RAS"): a thread of its own
// queries every `interval` while this node runs NCCL processes (set_wanted), and keeps the
// latest answer for the scrape. A query blocks for up to `timeout` (NCCL's STATUS gathers the
// whole job), so it never runs on the scan or under a scrape.
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>

#include "nccl/ras_query.h"
#include "nccl/ras_status.h"

namespace neutracer {

struct RasPollerSettings {
  std::string address = "localhost:28028";
  std::chrono::milliseconds interval{60'000};
  std::chrono::milliseconds timeout{15'000};
};

// Each poll's result, a label of neutracer_nccl_ras_polls_total.
enum class RasPollResult { ok, no_answer, bad_reply };
inline constexpr std::size_t kRasPollResults = 3;
std::string_view ras_poll_result_name(RasPollResult result);

struct RasSnapshot {
  // The last poll's status, if it read one (no stale job state); shared, not copied, per scan.
  std::shared_ptr<const RasStatus> status;
  std::optional<RasPollResult> last; // none before the first poll
  std::string last_error;            // why the last poll failed
  std::array<std::uint64_t, kRasPollResults> polls{};
  double last_poll_seconds = 0; // how long the last poll took, connect to close
};

class RasPoller {
public:
  using Query = std::function<RasReply(const std::string &, std::chrono::milliseconds)>;

  explicit RasPoller(RasPollerSettings settings, Query query = query_ras_status);
  // Stops the thread: a query in flight is waited for (at most the timeout).
  ~RasPoller();
  RasPoller(const RasPoller &) = delete;
  RasPoller &operator=(const RasPoller &) = delete;

  // Polls only while wanted: a node without NCCL processes asks nobody. The first poll after
  // wanted rises is due at once; when it falls, the last status is dropped.
  void set_wanted(bool wanted);
  RasSnapshot snapshot() const;
  // Asks the thread to stop now (the destructor waits for it): an owner stops several at once.
  void request_stop();

private:
  void run(const std::stop_token &stop);
  void poll();

  const RasPollerSettings settings_;
  const Query query_;
  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  bool wanted_ = false;
  std::uint64_t rises_ = 0; // times wanted became true
  RasSnapshot snapshot_;
  std::jthread thread_; // last: started once the rest is built
};

} // namespace neutracer
