// SPDX-License-Identifier: Apache-2.0
#include "common/stack_pages.h"

#include <cstdint>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace neutracer {
namespace {

// 16 pages of stack, whatever the page size (4 KiB on x86-64, up to 64 KiB on arm64).
const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
constexpr std::size_t kMaxDeep = 16 * 64 * 1024;

// Touches 16 pages of stack below its caller, as a deep request handler would.
__attribute__((noinline)) std::uint8_t touch_deep_stack() {
  volatile std::uint8_t block[kMaxDeep];
  const std::size_t deep = 16 * kPage;
  for (std::size_t i = kMaxDeep - deep; i < kMaxDeep; i += 512)
    block[i] = static_cast<std::uint8_t>(i);
  return block[kMaxDeep - 1];
}

struct Residency {
  std::size_t resident = 0;
  std::size_t pages = 0;
};

// Resident pages of this thread's stack from its lowest address up to `top`.
Residency stack_residency_below(std::uintptr_t top) {
  pthread_attr_t attr;
  void *lowest = nullptr;
  std::size_t size = 0;
  EXPECT_EQ(pthread_getattr_np(pthread_self(), &attr), 0);
  EXPECT_EQ(pthread_attr_getstack(&attr, &lowest, &size), 0);
  pthread_attr_destroy(&attr);
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto from = (reinterpret_cast<std::uintptr_t>(lowest) + page - 1) & ~(page - 1);
  const auto to = top & ~(page - 1);
  Residency out;
  if (to <= from)
    return out;
  std::vector<unsigned char> map((to - from) / page);
  EXPECT_EQ(::mincore(reinterpret_cast<void *>(from), to - from, map.data()), 0);
  out.pages = map.size();
  for (const auto byte : map)
    out.resident += byte & 1;
  return out;
}

TEST(StackPages, DeepPagesOfAFinishedCallAreGivenBack) {
  Residency before, after;
  unsigned long released = 0;
  std::thread worker([&] {
    const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    const auto probe_top = frame - 4 * kPage; // below this lambda's own frame and the calls'
    touch_deep_stack();
    before = stack_residency_below(probe_top);
    released = release_stack_below_caller();
    after = stack_residency_below(probe_top);
  });
  worker.join();
  ASSERT_GT(before.pages, 0U);
  EXPECT_GE(before.resident, 8U) << "the deep call left its pages resident";
  EXPECT_GE(released, 8 * kPage);
  // mincore's own frame may touch a page or two just below the probe's top again.
  EXPECT_LE(after.resident, 2U) << "of " << after.pages << " pages";
}

TEST(StackPages, NothingOnTheMainThread) {
  // Its bounds are glibc's guess from the stack rlimit: the range could reach another mapping.
  EXPECT_EQ(release_stack_below_caller(), 0U);
}

TEST(StackPages, TheCallersFrameSurvives) {
  int survived = 0;
  std::thread worker([&] {
    volatile int values[256];
    for (int i = 0; i < 256; ++i)
      values[i] = i * 7;
    touch_deep_stack();
    release_stack_below_caller();
    int sum = 0;
    for (int i = 0; i < 256; ++i)
      sum += values[i] == i * 7;
    survived = sum;
  });
  worker.join();
  EXPECT_EQ(survived, 256);
}

} // namespace
} // namespace neutracer
