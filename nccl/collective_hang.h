// SPDX-License-Identifier: Apache-2.0
#pragma once
// A collective hang on this node (docs/nccl.md): the ranks of a communicator stopped making
// collective calls while they disagree on how many they made. Those that called the latest
// collective wait inside it for those that did not. Pure: times are passed in.
//
// No collective in flight is not a hang: ranks that all stopped at the same collective (a
// checkpoint, an evaluation phase without collectives) are quiet, however long. The host's
// calls are what is seen, not the GPU's completion: NCCL enqueues and returns, so a rank may run
// a few collectives ahead of the others while all is well; the stall is what tells.
#include <cstdint>
#include <optional>
#include <vector>

#include "nccl/communicators.h"

namespace neutracer {

struct CollectiveHangSettings {
  double stall_seconds = 30; // no collective call by any rank for this long
};

struct CollectiveHang {
  std::vector<NcclRank> waiting; // called the latest collective
  std::vector<NcclRank> behind;  // did not: the ranks the others wait for
  nt_nccl_op op = NT_NCCL_NONE;  // the collective the waiting ranks are in
  std::uint64_t collective = 0;  // its sequence number (from 1)
  double stalled_seconds = 0;    // since the latest collective call of any rank
};

// `ranks`: one communicator's ranks on this node (joined_communicators). Needs two or more.
std::optional<CollectiveHang> find_collective_hang(const std::vector<NcclRank> &ranks,
                                                   std::uint64_t now_ns,
                                                   const CollectiveHangSettings &settings);

} // namespace neutracer
