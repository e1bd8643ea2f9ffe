// SPDX-License-Identifier: Apache-2.0
#include "stacks/call_site_stack.h"

#include <algorithm>

namespace neutracer {

CallSiteStack call_site_stack(std::span<const std::uint64_t> frames, StackCapture capture,
                              std::uint64_t caller, std::size_t depth) {
  const auto end = std::find(frames.begin(), frames.end(), 0);
  const std::span<const std::uint64_t> walked(frames.begin(), end);
  CallSiteStack stack;
  stack.depth_limited = depth > 0 && walked.size() >= depth;
  if (capture == StackCapture::at_return) {
    stack.addresses.assign(walked.begin(), walked.end());
    return stack;
  }
  // At entry the first frame is the API itself, and the frame-pointer chain starts at its
  // caller's frame: the caller's own return address is on top of the stack, which kernels with
  // perf's uprobe fix-up insert and older ones skip.
  const auto rest = walked.empty() ? walked : walked.subspan(1);
  const bool insert_caller = caller != 0 && (rest.empty() || rest.front() != caller);
  stack.addresses.reserve(rest.size() + 1);
  if (insert_caller)
    stack.addresses.push_back(caller);
  for (const auto address : rest)
    stack.addresses.push_back(address);
  return stack;
}

} // namespace neutracer
