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
  event.enter_ns = time_ns;
  event.exit_ns = time_ns + 1000;
  event.comm = comm;
  event.comm_key = unique_id_key;
  event.rank = rank;
  event.nranks = nranks;
  event.stack_id = NT_NO_STACK;
  return event;
}

inline nt_nccl_event nccl_call(nt_nccl_op op, std::uint64_t comm, std::uint64_t count,
                               std::uint32_t datatype, std::uint64_t enter_ns,
                               std::uint32_t result = 0) {
  nt_nccl_event event{};
  event.kind = NT_EVENT_NCCL;
  event.op = op;
  event.enter_ns = enter_ns;
  event.exit_ns = enter_ns + 20'000; // 20 us inside the call
  event.comm = comm;
  event.count = count;
  event.datatype = datatype;
  event.result = result;
  event.rank = -1;
  event.nranks = -1;
  event.stack_id = 7;
  return event;
}

} // namespace neutracer::test
