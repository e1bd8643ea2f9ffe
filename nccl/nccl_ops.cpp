// SPDX-License-Identifier: Apache-2.0
#include "nccl/nccl_ops.h"

#include <array>

namespace neutracer {

std::string_view nccl_op_name(nt_nccl_op op) {
  static constexpr std::array<std::string_view, NT_NCCL_OP_MAX> kNames = {"none",
                                                                          "AllReduce",
                                                                          "Broadcast",
                                                                          "Reduce",
                                                                          "AllGather",
                                                                          "ReduceScatter",
                                                                          "Send",
                                                                          "Recv",
                                                                          "CommInitRank",
                                                                          "CommInitRankConfig",
                                                                          "CommInitRankScalable",
                                                                          "CommSplit",
                                                                          "CommDestroy",
                                                                          "CommAbort"};
  const auto index = static_cast<std::size_t>(op);
  return index < kNames.size() ? kNames[index] : "unknown";
}

bool is_nccl_collective(nt_nccl_op op) {
  return op >= NT_NCCL_ALL_REDUCE && op <= NT_NCCL_REDUCE_SCATTER;
}

bool is_nccl_transfer(nt_nccl_op op) { return op >= NT_NCCL_ALL_REDUCE && op <= NT_NCCL_RECV; }

std::optional<std::size_t> nccl_datatype_bytes(std::uint32_t datatype) {
  // ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64, ncclFloat16,
  // ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2 (nccl.h, 2.28).
  static constexpr std::array<std::size_t, 12> kBytes = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  if (datatype >= kBytes.size())
    return std::nullopt;
  return kBytes[datatype];
}

} // namespace neutracer
