// SPDX-License-Identifier: Apache-2.0
#pragma once
// NCCL call events as the probes send them, for the nccl/ tests.
#include <cstdint>

#include "bpf/neutracer_abi.h"

namespace neutracer::test {

inline nt_nccl_event nccl_init(std::uint64_t comm, std::uint64_t unique_id_key, int rank,
                               int nranks, std::uint64_t time_ns = 1) {
  nt_nccl_event event{};
  event.kind = NT_EVENT_NCCL;
  event.op = NT_NCCL_COMM_INIT_RANK_CONFIG;
  event.call.enter_ns = time_ns;
  event.exit_ns = time_ns + 1000;
  event.call.comm = comm;
  event.call.comm_key = unique_id_key;
  event.call.rank = rank;
  event.call.nranks = nranks;
  event.call.stack_id = NT_NO_STACK;
  return event;
}

inline nt_nccl_event nccl_call(nt_nccl_op op, std::uint64_t comm, std::uint64_t count,
                               std::uint32_t datatype, std::uint64_t enter_ns,
                               std::uint32_t result = 0) {
  nt_nccl_event event{};
  event.kind = NT_EVENT_NCCL;
  event.op = op;
  event.call.enter_ns = enter_ns;
  event.exit_ns = enter_ns + 20'000; // 20 us inside the call
  event.call.comm = comm;
  event.call.count = count;
  event.call.datatype = datatype;
  event.result = result;
  event.call.rank = -1;
  event.call.nranks = -1;
  event.call.stack_id = 7;
  return event;
}

} // namespace neutracer::test
