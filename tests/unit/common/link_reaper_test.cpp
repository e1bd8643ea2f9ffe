// SPDX-License-Identifier: Apache-2.0
// LinkReaper: removals queued together run together (each waits for RCU grace periods in the
// kernel, and concurrent waits share them), and the destructor finishes every one.
#include "common/bpf_link.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace neutracer {
namespace {

using namespace std::chrono_literals;

// Each job waits (up to 20 s) until all `total` jobs have started: they can all finish only if
// they run at the same time.
struct Rendezvous {
  explicit Rendezvous(int total) : total(total) {}
  void arrive_and_wait() {
    std::unique_lock lock(mutex);
    ++arrived;
    changed.notify_all();
    if (changed.wait_for(lock, 20s, [&] { return arrived >= total; }))
      ++met;
  }
  const int total;
  std::mutex mutex;
  std::condition_variable changed;
  int arrived = 0;
  std::atomic<int> met{0};
};

TEST(LinkReaper, QueuedRemovalsRunTogether) {
  constexpr int kJobs = 16;
  Rendezvous rendezvous(kJobs);
  {
    LinkReaper reaper;
    // Held until all are queued, so the reaper finds them in one batch.
    std::mutex gate;
    std::unique_lock hold(gate);
    reaper.run([&] { std::lock_guard wait_for_the_rest(gate); });
    for (int i = 0; i < kJobs; ++i)
      reaper.run([&] { rendezvous.arrive_and_wait(); });
    hold.unlock();
  } // the destructor waits for every removal
  EXPECT_EQ(rendezvous.arrived, kJobs);
  EXPECT_EQ(rendezvous.met.load(), kJobs) << "removals queued together ran one after another";
}

TEST(LinkReaper, DestructorFinishesEveryQueuedRemoval) {
  std::atomic<int> done{0};
  {
    LinkReaper reaper;
    for (int i = 0; i < 200; ++i)
      reaper.run([&] { done.fetch_add(1); });
  }
  EXPECT_EQ(done.load(), 200);
}

} // namespace
} // namespace neutracer
