// SPDX-License-Identifier: Apache-2.0
#include "common/descriptor_reserve.h"

#include <fcntl.h>

namespace neutracer {

DescriptorReserve::DescriptorReserve(std::size_t count) : count_(count) {
  held_.reserve(count);
  while (held_.size() < count) {
    UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!fd)
      break;
    held_.push_back(std::move(fd));
  }
}

} // namespace neutracer
