// SPDX-License-Identifier: Apache-2.0
#include "common/stack_pages.h"

#include <cstdint>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace neutracer {
namespace {

// The lowest usable address of the calling thread's stack, page-aligned; 0 when unknown or for
// the main thread, whose bounds glibc guesses from the stack rlimit (the range could reach a
// mapping below the stack). Read once per thread: pthread_getattr_np allocates and asks the
// kernel for the thread's CPU affinity.
std::uintptr_t stack_floor(std::uintptr_t page) {
  thread_local const std::uintptr_t floor = [page]() -> std::uintptr_t {
    if (::syscall(SYS_gettid) == ::getpid())
      return 0;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
      return 0;
    void *lowest = nullptr;
    std::size_t size = 0;
    const bool known = pthread_attr_getstack(&attr, &lowest, &size) == 0;
    pthread_attr_destroy(&attr);
    return known ? (reinterpret_cast<std::uintptr_t>(lowest) + page - 1) & ~(page - 1) : 0;
  }();
  return floor;
}

} // namespace

// Not inlined: its own frame lies below the caller's, and that is where the dropping starts.
__attribute__((noinline)) unsigned long release_stack_below_caller() {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t from = stack_floor(page);
  // A page of margin below this frame: its locals and the madvise call's frames are there.
  const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  const auto to = (frame & ~(page - 1)) - page;
  if (from == 0 || to <= from)
    return 0;
  if (::madvise(reinterpret_cast<void *>(from), to - from, MADV_DONTNEED) != 0)
    return 0;
  return to - from;
}

} // namespace neutracer
