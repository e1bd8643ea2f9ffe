// SPDX-License-Identifier: Apache-2.0
#include "cuda/nccl_symbols.h"

#include <array>

namespace neutracer {

std::span<const NcclSymbol> nccl_symbols() {
  // The public names; their pnccl* twins (the profiling interface) share the same code.
  static constexpr std::array<NcclSymbol, NT_NCCL_OP_MAX - 1> kSymbols{{
      {"ncclAllReduce", NT_NCCL_ALL_REDUCE},
      {"ncclBroadcast", NT_NCCL_BROADCAST},
      {"ncclReduce", NT_NCCL_REDUCE},
      {"ncclAllGather", NT_NCCL_ALL_GATHER},
      {"ncclReduceScatter", NT_NCCL_REDUCE_SCATTER},
      {"ncclSend", NT_NCCL_SEND},
      {"ncclRecv", NT_NCCL_RECV},
      {"ncclCommInitRank", NT_NCCL_COMM_INIT_RANK},
      {"ncclCommInitRankConfig", NT_NCCL_COMM_INIT_RANK_CONFIG},
      {"ncclCommInitRankScalable", NT_NCCL_COMM_INIT_RANK_SCALABLE},
      {"ncclCommSplit", NT_NCCL_COMM_SPLIT},
      {"ncclCommDestroy", NT_NCCL_COMM_DESTROY},
      {"ncclCommAbort", NT_NCCL_COMM_ABORT},
  }};
  return kSymbols;
}

} // namespace neutracer
