// SPDX-License-Identifier: Apache-2.0
#include "gpuhealth/gpu_health_monitor.h"

#include <spdlog/spdlog.h>

#include "kmsg/xid_catalog.h"

namespace neutracer {
namespace {

// Backlog reports logged one by one at most; the rest only in a count.
constexpr std::uint64_t kBacklogLogLines = 20;

} // namespace

GpuHealthMonitor::GpuHealthMonitor(Settings settings)
    : xid_limit_(settings.xid_journal_per_minute),
      xid_journal_per_minute_(settings.xid_journal_per_minute),
      max_records_(settings.max_records_per_scan) {
  if (settings.read_kernel_log)
    reader_.emplace(settings.kmsg_path);
}

void GpuHealthMonitor::read_kernel_log(const GpuAddressBook &gpus, const TracedLookup &traced,
                                       std::uint64_t now_ns, std::vector<JournalEntry> &out) {
  auto batch = reader_->read(max_records_);
  stats_.healthy = reader_->healthy();
  stats_.records += batch.records.size();
  stats_.malformed += batch.malformed;
  if (batch.lost > 0)
    spdlog::warn("kernel log: {} records were overwritten before they were read", batch.lost);
  stats_.lost += batch.lost;
  for (auto &[record, backlog] : batch.records) {
    auto report = parse_xid_report(record.message);
    if (!report)
      continue;
    XidEvent event{std::move(*report), "", record.usec, std::move(record.message)};
    event.gpu = gpus.label(event.report.pci);
    if (backlog) {
      if (++stats_.xid_backlog <= kBacklogLogLines)
        spdlog::info("kernel log held an earlier Xid {} on GPU {} ({:.0f} s after boot): {}",
                     event.report.xid, event.gpu, static_cast<double>(event.usec) / 1e6,
                     event.message);
      continue;
    }
    ledger_.count(event);
    std::optional<XidProcess> process;
    if (event.report.pid && traced)
      process = traced(*event.report.pid);
    if (process)
      ledger_.charge(process->id, event);
    // Logged and journaled within the same limit: under systemd the log is the journal too.
    if (xid_limit_.allow(now_ns)) {
      auto entry = xid_journal_entry(event, process ? &*process : nullptr);
      spdlog::warn("{}", entry.message);
      out.push_back(std::move(entry));
    }
  }
  if (xid_limit_.suppressed() > logged_suppressed_) {
    spdlog::warn("{} Xid reports not logged or journaled so far (more than {} a minute); the "
                 "counters have every report",
                 xid_limit_.suppressed(), xid_journal_per_minute_);
    logged_suppressed_ = xid_limit_.suppressed();
  }
}

std::vector<JournalEntry> GpuHealthMonitor::scan(const NvmlSnapshot &nvml,
                                                 const GpuAddressBook &gpus,
                                                 const TracedLookup &traced,
                                                 const std::set<ProcessId> &live,
                                                 std::uint64_t now_ns) {
  std::vector<JournalEntry> out;
  if (reader_)
    read_kernel_log(gpus, traced, now_ns, out);
  ledger_.retain(live);
  if (nvml.in_use)
    for (auto &entry : nvml_watch_.update(nvml)) {
      spdlog::error("{}", entry.message);
      out.push_back(std::move(entry));
    }
  return out;
}

} // namespace neutracer
