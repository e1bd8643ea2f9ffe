// SPDX-License-Identifier: Apache-2.0
// GPU health from the driver: Xid reports read from a stand-in kernel log, mapped to GPUs by
// PCI address and to traced processes, counted and journaled; NVML health transitions.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <unistd.h>

#include "gpuhealth/gpu_addresses.h"
#include "gpuhealth/gpu_health_journal.h"
#include "gpuhealth/gpu_health_monitor.h"
#include "gpuhealth/journal_rate_limit.h"
#include "gpuhealth/nvml_health_watch.h"
#include "gpuhealth/xid_ledger.h"

namespace neutracer {
namespace {

namespace fs = std::filesystem;
using Fields = std::map<std::string, std::string>;

Fields fields_of(const JournalEntry &entry) {
  return Fields(entry.fields.begin(), entry.fields.end());
}

XidEvent event(unsigned xid, std::string gpu, std::optional<std::uint32_t> pid = std::nullopt) {
  XidEvent e;
  e.report.xid = xid;
  e.report.pci = {0, 0x3b, 0};
  e.report.pid = pid;
  e.gpu = std::move(gpu);
  return e;
}

TEST(GpuAddressBook, MapsTheDriversAddressToNvmlOrProcIndices) {
  const GpuAddressBook book({{"00000000:17:00.0", 0}, {"0000:3b:00.0", 1}, {"garbage", 7}});
  EXPECT_EQ(book.label({0, 0x17, 0}), "0");
  EXPECT_EQ(book.label(*parse_pci_address("PCI:0000:3b:00")), "1");
  EXPECT_EQ(book.label({0, 0x99, 0}), "unknown");
  EXPECT_TRUE(GpuAddressBook().empty());
}

TEST(XidLedger, CountsPerGpuAndProcessWithinBounds) {
  XidLedger ledger;
  const ProcessId traced{1234, 99};
  ledger.count(event(31, "0", 1234));
  ledger.count(event(31, "0", 1234));
  ledger.count(event(79, "1"));
  ledger.charge(traced, event(31, "0", 1234));
  EXPECT_EQ(ledger.by_gpu().at({"0", "31"}), 2u);
  EXPECT_EQ(ledger.by_gpu().at({"1", "79"}), 1u);
  EXPECT_EQ(ledger.by_process().at(traced).at({"0", "31"}), 1u);
  for (unsigned xid = 0; xid < 2 * XidLedger::kMaxSeries; ++xid)
    ledger.count(event(xid % (kMaxXid + 1), "2"));
  EXPECT_EQ(ledger.by_gpu().size(), XidLedger::kMaxSeries + 1); // the rest in xid="other"
  EXPECT_GT(ledger.by_gpu().at({"2", "other"}), 0u);
  ledger.retain({});
  EXPECT_TRUE(ledger.by_process().empty());
}

TEST(GpuHealthJournal, AFatalXidInATracedProcessIsTiedToIt) {
  auto e = event(31, "0", 1234);
  e.report.process_name = "python3";
  e.message = "NVRM: Xid (PCI:0000:3b:00): 31, pid=1234, name=python3, Ch 8";
  const XidProcess traced{{1234, 99}, "train.py", "abcdef"};
  const auto entry = xid_journal_entry(e, &traced);
  EXPECT_EQ(entry.message_id, kXidProcessMessageId);
  EXPECT_EQ(entry.priority, 3);
  EXPECT_EQ(entry.message, "Xid 31 on GPU 0 (0000:3b:00): GPU memory page fault, in process "
                           "1234 (train.py): its GPU work ended");
  const auto fields = fields_of(entry);
  EXPECT_EQ(fields.at("XID"), "31");
  EXPECT_EQ(fields.at("GPU"), "0");
  EXPECT_EQ(fields.at("PCI_BUS_ID"), "0000:3b:00");
  EXPECT_EQ(fields.at("TARGET_PID"), "1234");
  EXPECT_EQ(fields.at("TARGET_COMM"), "train.py");
  EXPECT_EQ(fields.at("TARGET_CONTAINER"), "abcdef");
  EXPECT_EQ(fields.at("TRACED"), "1");
  EXPECT_EQ(fields.at("XID_ORIGIN"), "application");
  EXPECT_EQ(fields.at("KERNEL_MESSAGE"), e.message);
}

TEST(GpuHealthJournal, OtherXidsUseTheGeneralMessageId) {
  auto untraced = event(31, "0", 555);
  untraced.report.process_name = "other";
  auto entry = xid_journal_entry(untraced, nullptr);
  EXPECT_EQ(entry.message_id, kXidMessageId);
  EXPECT_EQ(fields_of(entry).at("TRACED"), "0");
  EXPECT_EQ(fields_of(entry).at("TARGET_COMM"), "other");

  // Xid 63 (a row remapping recorded) does not end anyone's work: a warning.
  const XidProcess traced{{1234, 99}, "train.py", ""};
  entry = xid_journal_entry(event(63, "1", 1234), &traced);
  EXPECT_EQ(entry.message_id, kXidMessageId);
  EXPECT_EQ(entry.priority, 3); // hardware
  entry = xid_journal_entry(event(61, "1"), nullptr);
  EXPECT_EQ(entry.priority, 4);
  EXPECT_EQ(fields_of(entry).count("TARGET_PID"), 0u);
}

NvmlDeviceSample device(unsigned index) {
  NvmlDeviceSample s;
  s.device.index = index;
  s.device.pci_bus_id = "00000000:3B:00.0";
  return s;
}

TEST(NvmlHealthWatch, AnnouncesEachConditionOnItsRisingEdge) {
  NvmlHealthWatch watch;
  NvmlSnapshot snapshot;
  snapshot.in_use = true;
  snapshot.devices = {device(0)};
  auto &s = snapshot.devices[0];
  s.ecc_errors = {{NvmlEccType::uncorrected, NvmlEccCounter::volatile_count, 2}};
  s.remapped_rows = NvmlRemappedRows{0, 0, false, false};
  EXPECT_TRUE(watch.update(snapshot).empty()); // the first counts are a baseline

  s.ecc_errors[0].count = 5;
  s.remapped_rows->pending = true;
  auto entries = watch.update(snapshot);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].message_id, kEccUncorrectedMessageId);
  EXPECT_EQ(fields_of(entries[0]).at("ECC_NEW_ERRORS"), "3");
  EXPECT_EQ(entries[1].message_id, kMemoryRepairMessageId);
  EXPECT_EQ(fields_of(entries[1]).at("MEMORY_REPAIR"), "row_remap_pending");
  EXPECT_TRUE(watch.update(snapshot).empty()); // still pending, no new errors

  // Lost: one critical entry; the values NVML no longer gives keep their last state.
  s.lost = true;
  s.ecc_errors.clear();
  s.remapped_rows.reset();
  entries = watch.update(snapshot);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].message_id, kGpuLostMessageId);
  EXPECT_EQ(entries[0].priority, 2);
  EXPECT_TRUE(watch.update(snapshot).empty());
}

TEST(GpuHealthJournal, EveryMessageIdIsExplainedInTheCatalog) {
  std::ifstream file(NEUTRACER_SOURCE_DIR "/systemd/neutracerd.catalog");
  ASSERT_TRUE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  for (const auto id : {kXidMessageId, kXidProcessMessageId, kGpuLostMessageId,
                        kEccUncorrectedMessageId, kMemoryRepairMessageId}) {
    EXPECT_EQ(id.size(), 32u);
    EXPECT_NE(text.str().find("-- " + std::string(id) + "\n"), std::string::npos) << id;
  }
}

TEST(JournalRateLimit, AllowsSoManyAMinute) {
  JournalRateLimit limit(2);
  EXPECT_TRUE(limit.allow(0));
  EXPECT_TRUE(limit.allow(1));
  EXPECT_FALSE(limit.allow(2));
  EXPECT_EQ(limit.suppressed(), 1u);
  EXPECT_TRUE(limit.allow(60'000'000'000ull));
}

class GpuHealthMonitorTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gpu-health-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    kmsg_ = dir_ / "kmsg";
    // History: an Xid from before the daemon started.
    append("4,1,100,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void append(const std::string &text) { std::ofstream(kmsg_, std::ios::app) << text; }

  std::vector<JournalEntry> scan(GpuHealthMonitor &monitor) {
    return monitor.scan(NvmlSnapshot{}, book_, traced_, live_, 0);
  }

  fs::path dir_, kmsg_;
  GpuAddressBook book_{{{"00000000:17:00.0", 0}, {"00000000:3B:00.0", 1}}};
  ProcessId traced_id_{4242, 7};
  std::set<ProcessId> live_{traced_id_};
  GpuHealthMonitor::TracedLookup traced_ = [this](std::uint32_t pid) -> std::optional<XidProcess> {
    if (pid == 4242)
      return XidProcess{traced_id_, "train.py", ""};
    return std::nullopt;
  };
};

TEST_F(GpuHealthMonitorTest, NewXidsAreCountedTiedAndJournaledButHistoryIsNot) {
  GpuHealthMonitor monitor({kmsg_.string(), true, 30, 4096});
  EXPECT_TRUE(scan(monitor).empty());
  EXPECT_TRUE(monitor.xids().by_gpu().empty());
  EXPECT_EQ(monitor.kernel_log().xid_backlog, 1u);
  EXPECT_TRUE(monitor.kernel_log().healthy);

  append("4,2,200,-;NVRM: Xid (PCI:0000:3b:00): 31, pid=4242, name=python3, Ch 00000008, intr "
         "10000000. MMU Fault\n"
         "4,3,300,-;NVRM: Xid (PCI:0000:17:00): 13, pid=777, name=other, Graphics SM\n"
         "6,4,400,-;usb 1-1: new device\n");
  const auto entries = scan(monitor);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].message_id, kXidProcessMessageId);
  EXPECT_EQ(fields_of(entries[0]).at("GPU"), "1");
  EXPECT_EQ(entries[1].message_id, kXidMessageId);
  EXPECT_EQ(fields_of(entries[1]).at("TRACED"), "0");
  EXPECT_EQ(monitor.xids().by_gpu().at({"1", "31"}), 1u);
  EXPECT_EQ(monitor.xids().by_gpu().at({"0", "13"}), 1u);
  EXPECT_EQ(monitor.xids().by_process().at(traced_id_).at({"1", "31"}), 1u);
  EXPECT_EQ(monitor.kernel_log().records, 4u);

  // The traced process exited: its counts go, the GPU's stay.
  live_.clear();
  scan(monitor);
  EXPECT_TRUE(monitor.xids().by_process().empty());
  EXPECT_EQ(monitor.xids().by_gpu().size(), 2u);
}

TEST_F(GpuHealthMonitorTest, AFloodIsCountedButJournaledWithinTheLimit) {
  GpuHealthMonitor monitor({kmsg_.string(), true, 5, 4096});
  scan(monitor);
  std::string flood;
  for (int seq = 2; seq < 102; ++seq)
    flood += "4," + std::to_string(seq) + ",0,-;NVRM: Xid (PCI:0000:17:00): 13, pid=1, name=x, y\n";
  append(flood);
  EXPECT_EQ(scan(monitor).size(), 5u);
  EXPECT_EQ(monitor.xids().by_gpu().at({"0", "13"}), 100u);
}

TEST_F(GpuHealthMonitorTest, TurnedOffReadsNothing) {
  GpuHealthMonitor monitor({kmsg_.string(), false, 30, 4096});
  EXPECT_FALSE(monitor.reads_kernel_log());
  scan(monitor);
  EXPECT_EQ(monitor.kernel_log().records, 0u);
}

} // namespace
} // namespace neutracer
