// SPDX-License-Identifier: Apache-2.0
#include "collectors/nccl_collector.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "common/monotonic_clock.h"
#include "config/config.h"
#include "exporters/alert_site.h"
#include "exporters/nccl_metrics.h"
#include "nccl/nccl_journal.h"

namespace neutracer {

NcclCollectorSettings nccl_collector_settings(const Config &config) {
  NcclCollectorSettings settings;
  settings.enabled = config.nccl.enabled;
  settings.hang.stall_seconds = in_seconds(config.nccl.hang_after);
  settings.straggler.window_seconds = in_seconds(config.nccl.straggler_window);
  settings.straggler.min_median_wait_seconds = in_seconds(config.nccl.straggler_min_wait);
  return settings;
}

NcclCollector::NcclCollector(const NcclCollectorSettings &settings, const CudaCollector &cuda,
                             SiteRecorder *sites, CountedJournal &journal)
    : settings_(settings), cuda_(cuda), sites_(sites), journal_(journal),
      stragglers_(settings.straggler) {}

void NcclCollector::nccl_call(const ProcessId &id, const nt_nccl_event &event) {
  communicators_.apply(id, event);
  const auto op = static_cast<nt_nccl_op>(event.op);
  if (op == NT_NCCL_COMM_DESTROY || op == NT_NCCL_COMM_ABORT)
    last_sites_.erase({id, event.call.comm});
  // A collective's site, kept while its stack can still be read (the process runs now).
  if (sites_ && is_nccl_collective(op) && event.call.stack_id != NT_NO_STACK) {
    const auto site =
        sites_->entry_site(id, event.call.stack_id, event.call.caller, event.call.python_stack);
    if (site >= 0)
      last_sites_[{id, event.call.comm}] = site;
  }
}

bool NcclCollector::scan() {
  if (!settings_.enabled)
    return true;
  // Exited, exec'd or forgotten: whatever the CUDA state no longer holds (a process's last
  // events may come after the scan that saw it go).
  std::vector<ProcessId> gone;
  for (const auto &[id, comms] : communicators_.processes())
    if (!cuda_.state().processes().contains(id))
      gone.push_back(id);
  for (const auto &exited : cuda_.exited())
    if (exited.replaced)
      gone.push_back(exited.id);
  for (const auto &id : gone) {
    communicators_.forget(id);
    std::erase_if(last_sites_, [&](const auto &entry) { return entry.first.first == id; });
  }
  now_ns_ = monotonic_ns();
  const auto previous = std::move(findings_);
  findings_ = find_nccl_problems(communicators_, now_ns_, settings_.hang, stragglers_);
  journal_new_findings(previous);
  std::erase_if(straggler_notices_, [&](const auto &entry) {
    return std::find(findings_.judged.begin(), findings_.judged.end(), entry.first) ==
           findings_.judged.end();
  });
  return true;
}

std::string NcclCollector::last_site(const std::string &communicator,
                                     const NcclRankId &rank) const {
  if (!sites_)
    return {};
  const auto comms = communicators_.processes().find(rank.process);
  if (comms == communicators_.processes().end())
    return {};
  for (const auto &[handle, comm] : comms->second) {
    if (comm.id != communicator)
      continue;
    const auto found = last_sites_.find({rank.process, handle});
    if (found == last_sites_.end())
      return {};
    const Site *site = sites_->site(rank.process, found->second);
    const auto notice = site ? notice_site(*site) : std::nullopt;
    return notice ? notice->text : std::string();
  }
  return {};
}

void NcclCollector::journal_new_findings(const NcclFindings &previous) {
  if (findings_.hangs.empty() && findings_.stragglers.empty())
    return; // the usual scan: no process names to gather
  std::map<ProcessId, std::string> comms;
  for (const auto &[id, process] : cuda_.state().processes())
    comms.emplace(id, process.comm);
  for (const auto &[id, hang] : findings_.hangs) {
    if (previous.hangs.contains(id))
      continue; // one entry per episode
    const auto site = hang.waiting.empty() ? std::string() : last_site(id, hang.waiting.front());
    const auto entry = nccl_hang_entry(id, hang, comms, site);
    spdlog::warn("alert: {}", entry.message);
    journal_.write(entry);
  }
  for (const auto &[id, straggler] : findings_.stragglers) {
    const auto before = straggler_notices_.find(id);
    if (before != straggler_notices_.end() && before->second.first == straggler.rank &&
        static_cast<double>(now_ns_ - before->second.second) / 1e9 < kStragglerRenoticeSeconds)
      continue;
    straggler_notices_[id] = {straggler.rank, now_ns_};
    const auto entry = nccl_straggler_entry(id, straggler, comms);
    spdlog::warn("alert: {}", entry.message);
    journal_.write(entry);
  }
}

void NcclCollector::write(MetricSink &sink) const {
  if (!settings_.enabled)
    return;
  write_nccl_metrics(communicators_, findings_, cuda_.state(), now_ns_, sink);
}

} // namespace neutracer
