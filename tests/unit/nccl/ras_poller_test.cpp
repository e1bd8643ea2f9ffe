// SPDX-License-Identifier: Apache-2.0
#include "nccl/ras_poller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace neutracer {
namespace {

using namespace std::chrono_literals;

constexpr const char *kStatus = R"(OK
{"nccl_version": "2.28.9", "communicators": [
  {"hash": "0xa", "secondary_hash": "0xb", "size": 1, "ranks": [
    {"rank": 0, "host": "10.0.0.1", "pid": 7, "cuda_dev": 0, "nvml_dev": 0,
     "status": {"init_state": 0, "async_error": 0, "abort_flag": false},
     "collective_counts": {"AllReduce": 3}}],
   "missing_ranks": []}]})";

// Answers with what `reply` holds at the time of each query, and counts the queries.
struct FakeQuery {
  std::atomic<int> calls{0};
  std::string address_seen;
  RasReply reply;
  std::mutex mutex;

  RasPoller::Query function() {
    return [this](const std::string &address, std::chrono::milliseconds) {
      const std::lock_guard lock(mutex);
      address_seen = address;
      ++calls;
      return reply;
    };
  }
  void answer(bool answered, std::string text, std::string error = "") {
    const std::lock_guard lock(mutex);
    reply = RasReply{answered, std::move(text), std::move(error)};
  }
};

// Waits (up to 10 s, never expected to take long) until `done` holds.
template <typename Condition> bool eventually(Condition done) {
  for (int i = 0; i < 1000 && !done(); ++i)
    std::this_thread::sleep_for(10ms);
  return done();
}

RasPollerSettings every(std::chrono::milliseconds interval) {
  RasPollerSettings settings;
  settings.address = "127.0.0.1:28028";
  settings.interval = interval;
  return settings;
}

TEST(RasPoller, AsksNobodyUntilWantedThenReadsTheStatus) {
  FakeQuery fake;
  fake.answer(true, kStatus);
  RasPoller poller(every(1h), fake.function());
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(fake.calls, 0); // no NCCL process here yet
  EXPECT_FALSE(poller.snapshot().last.has_value());
  poller.set_wanted(true);
  ASSERT_TRUE(eventually([&] { return poller.snapshot().last.has_value(); }));
  const auto snapshot = poller.snapshot();
  EXPECT_EQ(fake.address_seen, "127.0.0.1:28028");
  EXPECT_EQ(snapshot.last, RasPollResult::ok);
  ASSERT_NE(snapshot.status, nullptr);
  ASSERT_EQ(snapshot.status->communicators.size(), 1u);
  EXPECT_EQ(snapshot.status->communicators[0].hash, "0xa");
  EXPECT_EQ(snapshot.polls[static_cast<std::size_t>(RasPollResult::ok)], 1u);
  EXPECT_EQ(fake.calls, 1); // the next one an hour later
}

TEST(RasPoller, AFailedPollCountsItsResultAndDropsTheOldStatus) {
  FakeQuery fake;
  fake.answer(true, kStatus);
  RasPoller poller(every(10ms), fake.function());
  poller.set_wanted(true);
  ASSERT_TRUE(eventually([&] { return poller.snapshot().status != nullptr; }));
  fake.answer(false, "", "Connection refused");
  ASSERT_TRUE(eventually([&] { return poller.snapshot().last == RasPollResult::no_answer; }));
  auto snapshot = poller.snapshot();
  EXPECT_EQ(snapshot.status, nullptr); // the job's state is not shown from an old answer
  EXPECT_EQ(snapshot.last_error, "Connection refused");
  EXPECT_GE(snapshot.polls[static_cast<std::size_t>(RasPollResult::no_answer)], 1u);
  fake.answer(true, "OK\nnot json");
  ASSERT_TRUE(eventually([&] { return poller.snapshot().last == RasPollResult::bad_reply; }));
  snapshot = poller.snapshot();
  EXPECT_FALSE(snapshot.last_error.empty());
  EXPECT_GE(snapshot.polls[static_cast<std::size_t>(RasPollResult::ok)], 1u);
}

TEST(RasPoller, StopsPollingWhenNoLongerWanted) {
  FakeQuery fake;
  fake.answer(true, kStatus);
  RasPoller poller(every(10ms), fake.function());
  poller.set_wanted(true);
  ASSERT_TRUE(eventually([&] { return fake.calls >= 2; }));
  poller.set_wanted(false);
  std::this_thread::sleep_for(200ms); // a query in flight may still end
  const int settled = fake.calls;
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(fake.calls, settled);
}

TEST(RasPoller, TheJobsStatusGoesWithItsLastProcessAndComesBackAtOnce) {
  FakeQuery fake;
  fake.answer(true, kStatus);
  RasPoller poller(every(1h), fake.function());
  poller.set_wanted(true);
  ASSERT_TRUE(eventually([&] { return poller.snapshot().status != nullptr; }));
  poller.set_wanted(false); // the node's last NCCL process exited
  auto snapshot = poller.snapshot();
  EXPECT_EQ(snapshot.status, nullptr) << "a finished job's dead ranks are no news";
  EXPECT_FALSE(snapshot.last.has_value());
  EXPECT_EQ(snapshot.polls[static_cast<std::size_t>(RasPollResult::ok)], 1u) << "counters stay";
  poller.set_wanted(true); // a new job: asked at once, not an hour later
  ASSERT_TRUE(eventually([&] { return fake.calls == 2; }));
  ASSERT_TRUE(eventually([&] { return poller.snapshot().status != nullptr; }));
}

TEST(RasPoller, StoppingDoesNotWaitForTheInterval) {
  FakeQuery fake;
  fake.answer(true, kStatus);
  const auto started = std::chrono::steady_clock::now();
  {
    RasPoller poller(every(1h), fake.function());
    poller.set_wanted(true);
    ASSERT_TRUE(eventually([&] { return fake.calls == 1; }));
  }
  // Well under the hour: the destructor woke the thread.
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1min);
}

} // namespace
} // namespace neutracer
