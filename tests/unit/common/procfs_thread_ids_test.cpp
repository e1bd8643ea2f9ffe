// SPDX-License-Identifier: Apache-2.0
// ProcFs::list_thread_ids on this test process: its threads, and nothing for a gone process.
#include "common/procfs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <future>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

namespace neutracer {
namespace {

TEST(ProcFsThreadIds, ListsEveryThreadOfTheProcess) {
  std::promise<int> started;
  std::promise<void> finish;
  std::thread worker([&] {
    started.set_value(static_cast<int>(::syscall(SYS_gettid)));
    finish.get_future().wait();
  });
  const int worker_tid = started.get_future().get();
  const auto ids = ProcFs().list_thread_ids(::getpid());
  finish.set_value();
  worker.join();
  EXPECT_NE(std::find(ids.begin(), ids.end(), ::getpid()), ids.end());
  EXPECT_NE(std::find(ids.begin(), ids.end(), worker_tid), ids.end());
}

TEST(ProcFsThreadIds, AGoneProcessHasNone) {
  EXPECT_TRUE(ProcFs(NEUTRACER_FIXTURES_DIR "/proc").list_thread_ids(999999).empty());
}

} // namespace
} // namespace neutracer
