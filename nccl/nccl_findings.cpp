// SPDX-License-Identifier: Apache-2.0
#include "nccl/nccl_findings.h"

namespace neutracer {
namespace {

NcclRankId rank_id(const NcclRank &rank) { return {rank.process, rank.communicator->rank}; }

std::vector<NcclRankId> rank_ids(const std::vector<NcclRank> &ranks) {
  std::vector<NcclRankId> ids;
  for (const auto &rank : ranks)
    ids.push_back(rank_id(rank));
  return ids;
}

} // namespace

NcclFindings find_nccl_problems(const NcclCommunicators &all, std::uint64_t now_ns,
                                const CollectiveHangSettings &hang, StragglerHistory &stragglers) {
  NcclFindings findings;
  for (const auto &[id, ranks] : joined_communicators(all)) {
    if (ranks.size() < 2)
      continue;
    findings.judged.push_back(id);
    if (const auto found = find_collective_hang(ranks, now_ns, hang)) {
      findings.hangs[id] = {rank_ids(found->waiting), rank_ids(found->behind), found->op,
                            found->collective, found->stalled_seconds};
      continue; // a hung communicator has no arrivals to judge
    }
    if (const auto found = stragglers.judge(id, ranks, now_ns))
      findings.stragglers[id] = {rank_id(found->rank), found->wait_share, found->last_share,
                                 found->median_wait_seconds, found->collectives};
  }
  stragglers.keep_only(findings.judged);
  return findings;
}

} // namespace neutracer
