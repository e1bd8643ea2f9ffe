// SPDX-License-Identifier: Apache-2.0
#pragma once
// Journal entries for the NCCL detectors' findings, one fixed MESSAGE_ID each (explained in
// systemd/neutracerd.catalog). Pure.
#include <map>
#include <string>
#include <string_view>

#include "common/journal_writer.h"
#include "nccl/nccl_findings.h"

namespace neutracer {

inline constexpr std::string_view kNcclHangMessageId = "029c9974624c41f3bc20eeb0feaac98a";
inline constexpr std::string_view kNcclStragglerMessageId = "9c85f08ee6714b72bb7b6af09c392eaf";

// `comms`: process comm names, for the message. `site`: the waiting ranks' last call site
// ("function (file:line)"), empty when unknown.
JournalEntry nccl_hang_entry(const std::string &communicator, const NcclHangFinding &hang,
                             const std::map<ProcessId, std::string> &comms,
                             const std::string &site);
JournalEntry nccl_straggler_entry(const std::string &communicator,
                                  const NcclStragglerFinding &straggler,
                                  const std::map<ProcessId, std::string> &comms);

} // namespace neutracer
