// SPDX-License-Identifier: Apache-2.0
#include "allocator/allocator_view.h"

#include "common/enum_names.h"

namespace neutracer {

std::string_view allocator_view_failure_name(AllocatorViewFailure failure) {
  static constexpr std::array<std::string_view, kAllocatorViewFailures> kNames = {
      "no_library", "no_probes", "attach"};
  static_assert(kNames.size() == enum_count(AllocatorViewFailure::attach));
  return enum_name(failure, kNames);
}

} // namespace neutracer
