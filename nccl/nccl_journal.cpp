// SPDX-License-Identifier: Apache-2.0
#include "nccl/nccl_journal.h"

#include <cstdio>

#include "nccl/nccl_ops.h"

namespace neutracer {
namespace {

std::string comm_of(const std::map<ProcessId, std::string> &comms, const ProcessId &id) {
  const auto found = comms.find(id);
  return found == comms.end() ? std::string("?") : found->second;
}

// "rank 1 (python3, pid 4242)"; a rank NCCL decided (split) is named by its process alone.
std::string rank_text(const NcclRankId &rank, const std::map<ProcessId, std::string> &comms) {
  const std::string process =
      comm_of(comms, rank.process) + ", pid " + std::to_string(rank.process.pid);
  return rank.rank >= 0 ? "rank " + std::to_string(rank.rank) + " (" + process + ")"
                        : "process " + process;
}

std::string ranks_text(const std::vector<NcclRankId> &ranks,
                       const std::map<ProcessId, std::string> &comms) {
  std::string text;
  for (const auto &rank : ranks)
    text += (text.empty() ? "" : ", ") + rank_text(rank, comms);
  return text;
}

std::string pids(const std::vector<NcclRankId> &ranks) {
  std::string text;
  for (const auto &rank : ranks)
    text += (text.empty() ? "" : " ") + std::to_string(rank.process.pid);
  return text;
}

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

} // namespace

JournalEntry nccl_hang_entry(const std::string &communicator, const NcclHangFinding &hang,
                             const std::map<ProcessId, std::string> &comms,
                             const std::string &site) {
  JournalEntry entry;
  entry.message_id = std::string(kNcclHangMessageId);
  entry.priority = 3;
  const std::string op(nccl_op_name(hang.op));
  entry.message = "nccl_hang in communicator " + communicator + ": " +
                  ranks_text(hang.waiting, comms) + " wait" +
                  (hang.waiting.size() == 1 ? "s" : "") + " in " + op + " #" +
                  std::to_string(hang.collective) + (site.empty() ? "" : " at " + site) + " for " +
                  ranks_text(hang.behind, comms) + "; no collective for " +
                  fixed(hang.stalled_seconds, 0) + " s";
  entry.fields = {{"ALERT_KIND", "nccl_hang"},
                  {"NCCL_COMMUNICATOR", communicator},
                  {"NCCL_OP", op},
                  {"NCCL_COLLECTIVE", std::to_string(hang.collective)},
                  {"WAITING_PIDS", pids(hang.waiting)},
                  {"BEHIND_PIDS", pids(hang.behind)},
                  {"STALLED_SECONDS", fixed(hang.stalled_seconds, 1)}};
  if (!site.empty())
    entry.fields.emplace_back("NCCL_SITE", site);
  return entry;
}

JournalEntry nccl_straggler_entry(const std::string &communicator,
                                  const NcclStragglerFinding &straggler,
                                  const std::map<ProcessId, std::string> &comms) {
  JournalEntry entry;
  entry.message_id = std::string(kNcclStragglerMessageId);
  entry.priority = 4;
  entry.message =
      "nccl_straggler in communicator " + communicator + ": " + rank_text(straggler.rank, comms) +
      " arrives last at " + fixed(straggler.last_share * 100, 0) + " % of its collectives; " +
      fixed(straggler.wait_share * 100, 0) + " % of the waiting is for it; it calls a median " +
      fixed(straggler.median_wait_seconds * 1e3, 1) + " ms after the first rank, over " +
      std::to_string(straggler.collectives) + " collectives";
  entry.fields = {{"ALERT_KIND", "nccl_straggler"},
                  {"NCCL_COMMUNICATOR", communicator},
                  {"TARGET_PID", std::to_string(straggler.rank.process.pid)},
                  {"TARGET_COMM", comm_of(comms, straggler.rank.process)},
                  {"NCCL_RANK", std::to_string(straggler.rank.rank)},
                  {"WAIT_SHARE", fixed(straggler.wait_share, 3)},
                  {"LAST_SHARE", fixed(straggler.last_share, 3)},
                  {"MEDIAN_WAIT_SECONDS", fixed(straggler.median_wait_seconds, 4)}};
  return entry;
}

} // namespace neutracer
