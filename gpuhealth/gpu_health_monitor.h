// SPDX-License-Identifier: Apache-2.0
#pragma once
// The GPUs' health from the driver, once per scan: reads the kernel log for Xid reports
// (bounded per scan, never blocking), maps each to its GPU by PCI address and to the traced
// process the driver names, counts them, and watches NVML's samples for a lost GPU, new
// uncorrectable ECC errors and memory repairs. Returns the journal entries to write.
//
// Reports already in the kernel log when it was opened (since boot) are logged, not counted
// and not journaled: a restarted daemon must not raise them again.
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/journal_writer.h"
#include "gpuhealth/gpu_addresses.h"
#include "gpuhealth/gpu_health_journal.h"
#include "gpuhealth/journal_rate_limit.h"
#include "gpuhealth/nvml_health_watch.h"
#include "gpuhealth/xid_ledger.h"
#include "kmsg/kmsg_reader.h"
#include "nvml/nvml_sample.h"

namespace neutracer {

struct KernelLogStats {
  bool healthy = false;          // open and read without error
  std::uint64_t records = 0;     // records read (backlog included)
  std::uint64_t lost = 0;        // records overwritten before the daemon read them
  std::uint64_t malformed = 0;   // records that did not parse
  std::uint64_t xid_backlog = 0; // Xid reports already in the log at open (not counted)
};

class GpuHealthMonitor {
public:
  struct Settings {
    std::string kmsg_path = "/dev/kmsg";
    bool read_kernel_log = true;
    std::uint32_t xid_journal_per_minute = 30;
    std::size_t max_records_per_scan = 4096; // the rest wait for the next scan
  };
  // The traced process with this pid (host PID namespace), if any.
  using TracedLookup = std::function<std::optional<XidProcess>(std::uint32_t pid)>;

  explicit GpuHealthMonitor(Settings settings);

  std::vector<JournalEntry> scan(const NvmlSnapshot &nvml, const GpuAddressBook &gpus,
                                 const TracedLookup &traced, const std::set<ProcessId> &live,
                                 std::uint64_t now_ns);

  bool reads_kernel_log() const { return reader_.has_value(); }
  const KernelLogStats &kernel_log() const { return stats_; }
  const XidLedger &xids() const { return ledger_; }

private:
  void read_kernel_log(const GpuAddressBook &gpus, const TracedLookup &traced, std::uint64_t now_ns,
                       std::vector<JournalEntry> &out);

  std::optional<KmsgReader> reader_;
  KernelLogStats stats_;
  XidLedger ledger_;
  NvmlHealthWatch nvml_watch_;
  JournalRateLimit xid_limit_;
  std::uint32_t xid_journal_per_minute_;
  std::size_t max_records_;
  std::uint64_t logged_suppressed_ = 0;
};

} // namespace neutracer
