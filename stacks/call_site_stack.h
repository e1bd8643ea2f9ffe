// SPDX-License-Identifier: Apache-2.0
#pragma once
// The addresses of a stack from the code that called a CUDA API outwards, from what the kernel
// stored (bpf/neutracer_abi.h, "Native call stacks"). Pure.
#include <cstdint>
#include <span>
#include <vector>

namespace neutracer {

// Where the probe took the stack: at the API's return (allocations), the walk starts at the
// call site; at its entry (syncs, launches), it starts inside the API and may lack the caller.
enum class StackCapture { at_return, at_entry };

struct CallSiteStack {
  std::vector<std::uint64_t> addresses; // return addresses, innermost first
  bool depth_limited = false;           // the walk filled every slot it had
  // The call's Python stack in the kernel's map (nt_call_event.python_stack); 0 for none. The
  // same native stack run from two Python lines is two sites.
  std::uint64_t python_key = 0;
  bool operator==(const CallSiteStack &) const = default;
};

// `frames`: as read from the stack map (zeros past the walk are ignored); `caller`: the return
// address read at the API's entry (at_entry only; 0 when unknown); `depth`: the map's frames per
// stack.
CallSiteStack call_site_stack(std::span<const std::uint64_t> frames, StackCapture capture,
                              std::uint64_t caller, std::size_t depth);

} // namespace neutracer
