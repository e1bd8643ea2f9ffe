// SPDX-License-Identifier: Apache-2.0
#pragma once
// Journal entries about the GPUs' health: Xid reports, a GPU that fell off the bus, new
// uncorrectable ECC errors, memory repairs waiting for a GPU reset. One fixed MESSAGE_ID per
// kind, explained in the journal catalog (systemd/neutracerd.catalog). Pure.
#include <cstdint>
#include <string>
#include <string_view>

#include "common/journal_writer.h"
#include "common/process_id.h"
#include "gpuhealth/xid_ledger.h"

namespace neutracer {

inline constexpr std::string_view kXidMessageId = "5cfca864f8e64292864182eede5c1716";
// An Xid that ended the GPU work of a process the daemon traces.
inline constexpr std::string_view kXidProcessMessageId = "a108c949cbea4910901331c5231f38ad";
inline constexpr std::string_view kGpuLostMessageId = "e6613f137d8c466993190e71d5a794d4";
inline constexpr std::string_view kEccUncorrectedMessageId = "d6bd7e3e738c43d5b85a799e10291775";
inline constexpr std::string_view kMemoryRepairMessageId = "7dfbaf0b821f48cdae72906cc03b59bc";

// The traced process an Xid report names, as the daemon knows it.
struct XidProcess {
  ProcessId id;
  std::string comm;
  std::string container; // container id; empty outside containers
};

// `traced` is null when the report names no process or one the daemon does not trace.
JournalEntry xid_journal_entry(const XidEvent &event, const XidProcess *traced);

struct GpuIdentity {
  std::string gpu; // index label
  std::string uuid;
  std::string pci_bus_id;
};
JournalEntry gpu_lost_journal_entry(const GpuIdentity &gpu);
JournalEntry ecc_uncorrected_journal_entry(const GpuIdentity &gpu, std::uint64_t new_errors,
                                           std::uint64_t volatile_total);
// `what`: "row_remap_pending", "row_remap_failed" or "retired_pages_pending".
JournalEntry memory_repair_journal_entry(const GpuIdentity &gpu, std::string_view what);

} // namespace neutracer
