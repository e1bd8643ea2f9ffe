// SPDX-License-Identifier: Apache-2.0
#pragma once
// Builds the ring-buffer call events the unit tests feed to CudaState.
#include <cstdint>
#include <initializer_list>

#include "bpf/neutracer_abi.h"

namespace neutracer::test {

// A completed call of `api` by process `tgid` (thread tgid) started at `proc_start_ns`, with
// its arguments and what the return probe read; times and context are left 0.
inline nt_call_event call_event(nt_api api, std::uint32_t tgid, std::uint64_t proc_start_ns,
                                std::initializer_list<std::uint64_t> args,
                                std::initializer_list<std::uint64_t> out = {},
                                std::uint32_t result = 0) {
  nt_call_event e{};
  e.kind = NT_EVENT_CALL;
  e.api = api;
  e.tgid = tgid;
  e.tid = tgid;
  e.proc_start_ns = proc_start_ns;
  e.result = result;
  e.stack_id = NT_NO_STACK;
  std::size_t i = 0;
  for (const auto a : args)
    e.args[i++] = a;
  i = 0;
  for (const auto o : out)
    e.out[i++] = o;
  return e;
}

} // namespace neutracer::test
