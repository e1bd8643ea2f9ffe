// SPDX-License-Identifier: Apache-2.0
#include "gpuhealth/gpu_health_journal.h"

#include "kmsg/xid_catalog.h"

namespace neutracer {
namespace {

void add_gpu_fields(JournalEntry &entry, const GpuIdentity &gpu) {
  entry.fields.emplace_back("GPU", gpu.gpu);
  if (!gpu.uuid.empty())
    entry.fields.emplace_back("GPU_UUID", gpu.uuid);
  if (!gpu.pci_bus_id.empty())
    entry.fields.emplace_back("PCI_BUS_ID", gpu.pci_bus_id);
}

std::string gpu_words(const GpuIdentity &gpu) {
  return "GPU " + gpu.gpu + (gpu.pci_bus_id.empty() ? "" : " (" + gpu.pci_bus_id + ")");
}

} // namespace

JournalEntry xid_journal_entry(const XidEvent &event, const XidProcess *traced) {
  const auto &report = event.report;
  const auto info = xid_info(report.xid);
  const bool ends_traced_work = traced != nullptr && info.ends_work;
  JournalEntry entry;
  entry.message_id = std::string(ends_traced_work ? kXidProcessMessageId : kXidMessageId);
  // Errors stop work or need the GPU looked at; the rest are warnings.
  entry.priority = info.ends_work || info.origin == XidOrigin::hardware ? 3 : 4;
  const auto pci = format_pci_address(report.pci);
  const auto description = info.description.empty() ? std::string("no description known")
                                                    : std::string(info.description);
  entry.message = "Xid " + std::to_string(report.xid) + " on GPU " + event.gpu + " (" + pci +
                  "): " + description;
  const std::string comm =
      traced != nullptr && !traced->comm.empty() ? traced->comm : report.process_name;
  if (report.pid)
    entry.message += ", in process " + std::to_string(*report.pid) +
                     (comm.empty() ? std::string() : " (" + comm + ")");
  if (ends_traced_work)
    entry.message += ": its GPU work ended";
  entry.fields = {{"GPU", event.gpu},
                  {"PCI_BUS_ID", pci},
                  {"XID", std::to_string(report.xid)},
                  {"XID_ORIGIN", std::string(xid_origin_name(info.origin))},
                  {"XID_ENDS_WORK", info.ends_work ? "1" : "0"}};
  if (!info.description.empty())
    entry.fields.emplace_back("XID_DESCRIPTION", std::string(info.description));
  if (report.pid) {
    entry.fields.emplace_back("TARGET_PID", std::to_string(*report.pid));
    entry.fields.emplace_back("TRACED", traced != nullptr ? "1" : "0");
  }
  if (!comm.empty())
    entry.fields.emplace_back("TARGET_COMM", comm);
  if (traced != nullptr && !traced->container.empty())
    entry.fields.emplace_back("TARGET_CONTAINER", traced->container);
  entry.fields.emplace_back("KERNEL_MESSAGE", event.message);
  return entry;
}

JournalEntry gpu_lost_journal_entry(const GpuIdentity &gpu) {
  JournalEntry entry;
  entry.message_id = std::string(kGpuLostMessageId);
  entry.priority = 2; // critical
  entry.message = gpu_words(gpu) + " is lost: NVML answers NVML_ERROR_GPU_IS_LOST (it fell off "
                                   "the bus or stopped responding)";
  add_gpu_fields(entry, gpu);
  return entry;
}

JournalEntry ecc_uncorrected_journal_entry(const GpuIdentity &gpu, std::uint64_t new_errors,
                                           std::uint64_t volatile_total) {
  JournalEntry entry;
  entry.message_id = std::string(kEccUncorrectedMessageId);
  entry.priority = 3;
  entry.message = gpu_words(gpu) + " had " + std::to_string(new_errors) +
                  " new uncorrectable ECC error(s), " + std::to_string(volatile_total) +
                  " since the driver was loaded";
  add_gpu_fields(entry, gpu);
  entry.fields.emplace_back("ECC_NEW_ERRORS", std::to_string(new_errors));
  entry.fields.emplace_back("ECC_UNCORRECTED_VOLATILE", std::to_string(volatile_total));
  return entry;
}

JournalEntry memory_repair_journal_entry(const GpuIdentity &gpu, std::string_view what) {
  JournalEntry entry;
  entry.message_id = std::string(kMemoryRepairMessageId);
  const bool failed = what == "row_remap_failed";
  entry.priority = failed ? 3 : 4;
  entry.message = gpu_words(gpu) + (failed ? ": a row remapping failed; the GPU needs service"
                                    : what == "row_remap_pending"
                                        ? ": a memory row remapping waits for the next GPU reset"
                                        : ": retired memory pages wait for the next GPU reset");
  add_gpu_fields(entry, gpu);
  entry.fields.emplace_back("MEMORY_REPAIR", std::string(what));
  return entry;
}

} // namespace neutracer
