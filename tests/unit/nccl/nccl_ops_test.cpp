// SPDX-License-Identifier: Apache-2.0
#include "nccl/nccl_ops.h"

#include <gtest/gtest.h>

#include "cuda/nccl_symbols.h"

namespace neutracer {
namespace {

TEST(NcclOps, NamesAsNcclReportsThem) {
  EXPECT_EQ(nccl_op_name(NT_NCCL_ALL_REDUCE), "AllReduce");
  EXPECT_EQ(nccl_op_name(NT_NCCL_REDUCE_SCATTER), "ReduceScatter");
  EXPECT_EQ(nccl_op_name(NT_NCCL_RECV), "Recv");
  EXPECT_EQ(nccl_op_name(NT_NCCL_COMM_ABORT), "CommAbort");
  EXPECT_EQ(nccl_op_name(static_cast<nt_nccl_op>(99)), "unknown");
}

TEST(NcclOps, CollectivesAndTransfers) {
  EXPECT_TRUE(is_nccl_collective(NT_NCCL_BROADCAST));
  EXPECT_FALSE(is_nccl_collective(NT_NCCL_SEND));
  EXPECT_TRUE(is_nccl_transfer(NT_NCCL_SEND));
  EXPECT_FALSE(is_nccl_transfer(NT_NCCL_COMM_INIT_RANK));
  EXPECT_EQ(nccl_transfer_index(NT_NCCL_RECV), kNcclTransferOps - 1);
}

TEST(NcclOps, DatatypeSizes) {
  EXPECT_EQ(nccl_datatype_bytes(0), 1u);  // ncclInt8
  EXPECT_EQ(nccl_datatype_bytes(7), 4u);  // ncclFloat32
  EXPECT_EQ(nccl_datatype_bytes(9), 2u);  // ncclBfloat16
  EXPECT_EQ(nccl_datatype_bytes(11), 1u); // ncclFloat8e5m2
  EXPECT_FALSE(nccl_datatype_bytes(12));
}

TEST(NcclSymbols, EveryOperationHasOneSymbol) {
  std::vector<int> seen(NT_NCCL_OP_MAX, 0);
  for (const auto &symbol : nccl_symbols()) {
    EXPECT_TRUE(symbol.symbol.starts_with("nccl")) << symbol.symbol;
    ++seen[symbol.op];
  }
  for (int op = NT_NCCL_ALL_REDUCE; op < NT_NCCL_OP_MAX; ++op)
    EXPECT_EQ(seen[static_cast<std::size_t>(op)], 1) << nccl_op_name(static_cast<nt_nccl_op>(op));
}

} // namespace
} // namespace neutracer
