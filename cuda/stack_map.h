// SPDX-License-Identifier: Apache-2.0
#pragma once
// What call-site recording needs from the BPF side: the stack-trace map the probes fill, the
// Python stacks of allocations and the processes they are taken in, and the sampled launch
// stacks (bpf/neutracer_abi.h, "Native call stacks"). CudaTracer implements it;
// tests use a fake.
#include <cstdint>
#include <optional>
#include <vector>

#include "bpf/neutracer_abi.h"

namespace neutracer {

struct LaunchStackCount {
  std::uint32_t tgid = 0;
  std::uint64_t proc_start_ns = 0;
  std::int32_t stack_id = 0;
  std::uint64_t caller = 0;  // return address at the launch API's entry
  std::uint64_t samples = 0; // total since the process started being sampled
  std::uint64_t python_stack = 0; // the key of its Python stack (read_python_stack); 0: none
};

class StackMap {
public:
  virtual ~StackMap() = default;
  // Frames kept per stack; 0 when stacks are off (nothing below finds anything then).
  virtual std::uint32_t stack_depth() const = 0;
  // The frames of stack `id`, innermost first, as many as the walk found; nullopt when the map
  // holds no such id.
  virtual std::optional<std::vector<std::uint64_t>> read_stack(std::int32_t id) const = 0;
  // Every id the map holds now.
  virtual std::vector<std::int32_t> stack_ids() const = 0;
  virtual void delete_stacks(const std::vector<std::int32_t> &ids) = 0;
  // The Python stack an allocation event names (nt_call_event.python_stack); nullopt when the
  // map no longer holds it.
  virtual std::optional<nt_python_stack> read_python_stack(std::uint64_t key) const = 0;
  // Deletes a stored Python stack that does not match its key; the next call stores it anew.
  virtual void delete_python_stack(std::uint64_t key) = 0;
  // Where a process's interpreter keeps its frames (pystacks to_abi_offsets): from now on its
  // allocations carry their Python stacks. False when it could not be written.
  virtual bool set_python_process(std::uint32_t tgid, const nt_python_offsets &offsets) = 0;
  virtual void forget_python_process(std::uint32_t tgid) = 0;
  // A full read of the sampled launch stacks, and deleting some (processes that exited).
  virtual std::vector<LaunchStackCount> read_launch_stacks() const = 0;
  virtual void delete_launch_stacks(const std::vector<LaunchStackCount> &entries) = 0;
};

} // namespace neutracer
