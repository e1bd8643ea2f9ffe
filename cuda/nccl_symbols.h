// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which libnccl symbols neutracerd probes (bpf/nccl_calls.bpf.h), each with its nt_nccl_op: the
// attach cookie that tells the probe how to read the call's arguments.
#include <span>
#include <string_view>

#include "bpf/neutracer_abi.h"

namespace neutracer {

struct NcclSymbol {
  std::string_view symbol;
  nt_nccl_op op;
};

// Every symbol tried; one an older NCCL lacks (ncclCommInitRankScalable before 2.23) is skipped
// and counted as missing.
std::span<const NcclSymbol> nccl_symbols();

} // namespace neutracer
