// SPDX-License-Identifier: Apache-2.0
#include "common/stack_pages.h"

#include <cstdint>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

namespace neutracer {

// Not inlined: its own frame lies below the caller's, and that is where the dropping starts.
__attribute__((noinline)) unsigned long release_stack_below_caller() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0)
    return 0;
  void *lowest = nullptr;
  std::size_t size = 0;
  const bool known = pthread_attr_getstack(&attr, &lowest, &size) == 0;
  pthread_attr_destroy(&attr);
  if (!known || !lowest)
    return 0;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto from = (reinterpret_cast<std::uintptr_t>(lowest) + page - 1) & ~(page - 1);
  // A page of margin below this frame: its locals and the madvise call's frames are there.
  const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  const auto to = (frame & ~(page - 1)) - page;
  if (to <= from)
    return 0;
  if (::madvise(reinterpret_cast<void *>(from), to - from, MADV_DONTNEED) != 0)
    return 0;
  return to - from;
}

} // namespace neutracer
