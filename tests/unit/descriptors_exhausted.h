// SPDX-License-Identifier: Apache-2.0
#pragma once
// Runs out of file descriptors for as long as it lives: lowers RLIMIT_NOFILE's soft limit (as
// prlimit does) just above the descriptors open now and fills what is left, so that every open
// fails with EMFILE. Both are undone on destruction. Bounded: a few dozen descriptors at most.
#include <fcntl.h>
#include <stdexcept>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

namespace neutracer {

class DescriptorsExhausted {
public:
  DescriptorsExhausted() {
    if (::prlimit(0, RLIMIT_NOFILE, nullptr, &saved_) != 0)
      throw std::runtime_error("prlimit failed");
    const int lowest_free = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (lowest_free < 0)
      throw std::runtime_error("cannot open /dev/null");
    ::close(lowest_free);
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(lowest_free) + 16;
    if (::prlimit(0, RLIMIT_NOFILE, &lowered, nullptr) != 0)
      throw std::runtime_error("cannot lower RLIMIT_NOFILE");
    soft_limit_ = lowered.rlim_cur;
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;)
      filler_.push_back(fd);
  }
  ~DescriptorsExhausted() {
    for (const int fd : filler_)
      ::close(fd);
    ::prlimit(0, RLIMIT_NOFILE, &saved_, nullptr);
  }
  DescriptorsExhausted(const DescriptorsExhausted &) = delete;
  DescriptorsExhausted &operator=(const DescriptorsExhausted &) = delete;

  rlim_t soft_limit() const { return soft_limit_; }
  rlim_t hard_limit() const { return saved_.rlim_max; }

private:
  rlimit saved_{};
  rlim_t soft_limit_ = 0;
  std::vector<int> filler_;
};

} // namespace neutracer
