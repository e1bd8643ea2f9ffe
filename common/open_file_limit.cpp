// SPDX-License-Identifier: Apache-2.0
#include "common/open_file_limit.h"

#include <cerrno>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace neutracer {

OpenFileLimit open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return {};
  return {limit.rlim_cur, limit.rlim_max};
}

bool out_of_descriptors_now() {
  const int fd = ::open("/", O_PATH | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    return false;
  }
  return is_out_of_descriptors(errno);
}

} // namespace neutracer
