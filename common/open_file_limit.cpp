#include "common/open_file_limit.h"

#include <sys/resource.h>

namespace neutracer {

OpenFileLimit open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return {};
  return {limit.rlim_cur, limit.rlim_max};
}

} // namespace neutracer
