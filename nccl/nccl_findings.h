// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the NCCL detectors found at one scan, as plain values (the communicators they point at
// may be gone by the time the series are written). Pure.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bpf/neutracer_abi.h"
#include "common/process_id.h"
#include "nccl/collective_hang.h"
#include "nccl/straggler.h"

namespace neutracer {

struct NcclRankId {
  ProcessId process;
  int rank = -1;
  auto operator<=>(const NcclRankId &) const = default;
};

struct NcclHangFinding {
  std::vector<NcclRankId> waiting;
  std::vector<NcclRankId> behind;
  nt_nccl_op op = NT_NCCL_NONE;
  std::uint64_t collective = 0;
  double stalled_seconds = 0;
};

struct NcclStragglerFinding {
  NcclRankId rank;
  double wait_share = 0;
  double last_share = 0;
  double median_wait_seconds = 0;
  std::size_t collectives = 0;
};

struct NcclFindings {
  // By communicator id; only communicators with two or more ranks on this node are judged.
  std::map<std::string, NcclHangFinding> hangs;
  std::map<std::string, NcclStragglerFinding> stragglers;
  std::vector<std::string> judged; // communicator ids with two or more ranks here
};

// Judges every joined communicator of `all` at `now_ns`; `stragglers` tallies their collectives
// since the previous call.
NcclFindings find_nccl_problems(const NcclCommunicators &all, std::uint64_t now_ns,
                                const CollectiveHangSettings &hang, StragglerHistory &stragglers);

} // namespace neutracer
