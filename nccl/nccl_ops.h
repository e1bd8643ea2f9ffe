// SPDX-License-Identifier: Apache-2.0
#pragma once
// NCCL's calls and data types as neutracerd names them. Pure.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "bpf/neutracer_abi.h"

namespace neutracer {

// "AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter", "Send", "Recv" (NCCL's own
// names, as its RAS and profiler report them), "CommInitRank", ...
std::string_view nccl_op_name(nt_nccl_op op);

// Collectives: every rank of the communicator takes part, in the same order.
bool is_nccl_collective(nt_nccl_op op);
// Collectives and point-to-point calls: what moves data.
bool is_nccl_transfer(nt_nccl_op op);
inline constexpr std::size_t kNcclTransferOps = NT_NCCL_RECV; // ALL_REDUCE (1) .. RECV (7)
// 0 for ALL_REDUCE .. 6 for RECV.
inline std::size_t nccl_transfer_index(nt_nccl_op op) { return static_cast<std::size_t>(op) - 1; }

// Bytes of one element of ncclDataType_t `datatype`; nullopt for a type NCCL 2.28 lacks.
std::optional<std::size_t> nccl_datatype_bytes(std::uint32_t datatype);

} // namespace neutracer
