// SPDX-License-Identifier: Apache-2.0
// The kernel log reader and the Xid parser: /dev/kmsg's record format, a stand-in file or FIFO
// read in arbitrary pieces, lost records, and the Xid lines of several driver generations.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "kmsg/kmsg_reader.h"
#include "kmsg/kmsg_record.h"
#include "kmsg/kmsg_splitter.h"
#include "kmsg/xid_catalog.h"
#include "kmsg/xid_line.h"

namespace neutracer {
namespace {

namespace fs = std::filesystem;

TEST(KmsgRecord, ParsesHeaderAndMessage) {
  const auto record = parse_kmsg_record(
      "4,1234,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen "
      "off the bus.\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n");
  ASSERT_TRUE(record);
  EXPECT_EQ(record->level, 4);
  EXPECT_EQ(record->facility, 0);
  EXPECT_EQ(record->seq, 1234u);
  EXPECT_EQ(record->usec, 5678901u);
  EXPECT_EQ(record->message,
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.");
}

TEST(KmsgRecord, FacilityLevelExtraHeaderFieldsAndEscapes) {
  // Facility 3 (daemon), level 6; newer kernels append fields after FLAGS (caller id).
  const auto record = parse_kmsg_record("30,7,100,c,caller=T1;line one\\x0aline two \\xzz\\");
  ASSERT_TRUE(record);
  EXPECT_EQ(record->facility, 3);
  EXPECT_EQ(record->level, 6);
  EXPECT_EQ(record->message, "line one\nline two \\xzz\\");
}

TEST(KmsgRecord, EscapesAreTwoHexDigitsOfEitherCase) {
  // A sign is no digit: "\x-1" and "\x+f" stay as they are.
  EXPECT_EQ(unescape_kmsg("\\x1B\\xfF\\x-1\\x+f\\x7"), "\x1b\xff\\x-1\\x+f\\x7");
}

TEST(KmsgRecord, RejectsMalformedHeaders) {
  for (const char *text : {"", "no header at all", "4,1;x", "4,1,2;x", "a,1,2,-;x", "4,1,x,-;x",
                           "4,-1,2,-;x", ";x", "4,,2,-;x"})
    EXPECT_FALSE(parse_kmsg_record(text)) << text;
}

TEST(KmsgSplitter, JoinsPiecesAndKeepsDictionaryLinesWithTheirRecord) {
  KmsgSplitter splitter;
  splitter.feed("6,1,10,-;first\n SUBSYS");
  EXPECT_TRUE(splitter.take(false).empty()); // the dictionary line is still being written
  splitter.feed("TEM=pci\n6,2,20,-;sec");
  auto records = splitter.take(false);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0], "6,1,10,-;first\n SUBSYSTEM=pci\n");
  EXPECT_TRUE(splitter.take(true).empty()); // "sec" has no newline yet
  splitter.feed("ond\n");
  EXPECT_TRUE(splitter.take(false).empty()); // a dictionary line may still follow
  records = splitter.take(true);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0], "6,2,20,-;second\n");
  // A dictionary line after its record was taken is an orphan.
  splitter.feed(" DEVICE=+pci:0000:3b:00.0\n6,3,30,-;third\n");
  records = splitter.take(true);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0], "6,3,30,-;third\n");
  EXPECT_EQ(splitter.orphan_lines(), 1u);
}

TEST(KmsgSplitter, DropsAnOversizedLineAndGoesOn) {
  KmsgSplitter splitter;
  splitter.feed("6,1,10,-;" + std::string(KmsgSplitter::kMaxRecordBytes + 10, 'x'));
  EXPECT_TRUE(splitter.take(true).empty());
  EXPECT_EQ(splitter.oversized(), 1u);
  splitter.feed("yyy\n6,2,20,-;after\n");
  const auto records = splitter.take(true);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0], "6,2,20,-;after\n");
}

// Xid lines as drivers wrote them, from R3xx to R580.
TEST(XidReport, CurrentFormatWithPidAndName) {
  const auto xid = parse_xid_report(
      "NVRM: Xid (PCI:0000:65:00): 31, pid=1234, name=python3, Ch 00000008, intr 10000000. MMU "
      "Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f12_34560000. Fault is of type "
      "FAULT_PDE ACCESS_TYPE_READ");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->pci, (PciAddress{0, 0x65, 0}));
  EXPECT_EQ(xid->xid, 31u);
  EXPECT_EQ(xid->pid, 1234u);
  EXPECT_EQ(xid->process_name, "python3");
  EXPECT_TRUE(xid->detail.starts_with("Ch 00000008, intr 10000000. MMU Fault"));
}

TEST(XidReport, FallenOffTheBusWithAndWithoutProcess) {
  auto xid = parse_xid_report(
      "NVRM: Xid (PCI:0000:3b:00): 79, pid=2646416, name=pt_main_thread, GPU has fallen off the "
      "bus.");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->xid, 79u);
  EXPECT_EQ(xid->pid, 2646416u);
  EXPECT_EQ(xid->process_name, "pt_main_thread");
  EXPECT_EQ(xid->detail, "GPU has fallen off the bus.");

  xid = parse_xid_report("NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus.");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->pci, (PciAddress{0, 0x44, 0}));
  EXPECT_FALSE(xid->pid);
  EXPECT_EQ(xid->process_name, "");
  EXPECT_EQ(xid->detail, "GPU has fallen off the bus.");
}

TEST(XidReport, UnknownProcessAsR5xxWritesIt) {
  const auto xid = parse_xid_report(
      "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp "
      "Exception on (GPC 7, TPC 1, SM 0): Out Of Range Address");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->pci, (PciAddress{0, 0xcb, 0}));
  EXPECT_EQ(xid->xid, 13u);
  EXPECT_FALSE(xid->pid);
  EXPECT_EQ(xid->process_name, "");
  EXPECT_TRUE(xid->detail.starts_with("Graphics SM Warp Exception"));
}

TEST(XidReport, OldFormatWithoutPciPrefix) {
  const auto xid = parse_xid_report("NVRM: Xid (0000:03:00): 14, Channel 00000001");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->pci, (PciAddress{0, 3, 0}));
  EXPECT_EQ(xid->xid, 14u);
  EXPECT_FALSE(xid->pid);
  EXPECT_EQ(xid->detail, "Channel 00000001");
}

TEST(XidReport, NonZeroDomainAndHexCodesAfterTheXid) {
  const auto xid = parse_xid_report(
      "NVRM: Xid (PCI:0001:1a:00): 62, pid=99, name=nvidia-smi, 0000ee3b 0000ee49 00000000 "
      "000025d4 00000000 00000000");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->pci, (PciAddress{1, 0x1a, 0}));
  EXPECT_EQ(xid->process_name, "nvidia-smi");
  EXPECT_EQ(format_pci_address(xid->pci), "0001:1a:00");
}

TEST(XidReport, ANameWithACommaEndsAtTheDriversSeparator) {
  const auto xid = parse_xid_report("NVRM: Xid (PCI:0000:17:00): 43, pid=7, name=a,b, Ch 00000010");
  ASSERT_TRUE(xid);
  EXPECT_EQ(xid->process_name, "a,b");
  EXPECT_EQ(xid->detail, "Ch 00000010");
}

TEST(XidReport, OtherLinesAreNotXids) {
  for (const char *text :
       {"NVRM: GPU at PCI:0000:3b:00: GPU-b850f46d-d5ea-c752-ddf3-c4453e44d3f7",
        "NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has",
        "NVRM: Xid (PCI:0000:3b:00): , pid=1", "NVRM: Xid (PCI:zzzz:3b:00): 79, x",
        "NVRM: Xid (PCI:0000:3b:00): 99999, x", "NVRM: Xid (PCI:0000:3b:00) 79", "NVRM: Xid (",
        "usb 1-1: new high-speed USB device"})
    EXPECT_FALSE(parse_xid_report(text)) << text;
}

TEST(PciAddress, EveryFormTheDaemonMeets) {
  const PciAddress expected{0, 0x3b, 0};
  EXPECT_EQ(parse_pci_address("0000:3b:00"), expected);
  EXPECT_EQ(parse_pci_address("PCI:0000:3b:00"), expected);
  EXPECT_EQ(parse_pci_address("00000000:3B:00.0"), expected); // NVML
  EXPECT_EQ(parse_pci_address("0000:3b:00.0"), expected);     // /proc/driver/nvidia/gpus
  EXPECT_FALSE(parse_pci_address("3b:00"));
  EXPECT_FALSE(parse_pci_address("0000:3b:00.12"));
  EXPECT_FALSE(parse_pci_address("0000:3b:40"));
}

TEST(XidCatalog, KnownCodesAndTheRest) {
  EXPECT_EQ(xid_info(79).origin, XidOrigin::hardware);
  EXPECT_TRUE(xid_info(79).ends_work);
  EXPECT_EQ(xid_info(31).origin, XidOrigin::application);
  EXPECT_TRUE(xid_info(31).ends_work);
  EXPECT_FALSE(xid_info(63).ends_work);
  EXPECT_EQ(xid_info(12345).description, "");
  EXPECT_EQ(xid_info(12345).origin, XidOrigin::driver);
  EXPECT_EQ(xid_origin_name(XidOrigin::hardware), "hardware");
}

class KmsgReaderTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kmsg-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void append(const fs::path &path, const std::string &text) {
    std::ofstream(path, std::ios::app) << text;
  }
  fs::path dir_;
};

TEST_F(KmsgReaderTest, AFileStandInGivesBacklogThenNewRecordsAndCountsGaps) {
  const auto path = dir_ / "kmsg";
  append(path, "6,10,100,-;booted\n4,11,200,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen "
               "off the bus.\n SUBSYSTEM=pci\n");
  KmsgReader reader(path.string());
  auto batch = reader.read(100);
  EXPECT_TRUE(reader.healthy());
  ASSERT_EQ(batch.records.size(), 2u);
  EXPECT_TRUE(batch.records[0].backlog);
  EXPECT_TRUE(batch.records[1].backlog);
  EXPECT_EQ(batch.records[1].record.seq, 11u);
  EXPECT_EQ(batch.lost, 0u);
  EXPECT_TRUE(reader.read(100).records.empty());

  // Records 12-14 were overwritten before the daemon read them; one line is garbage.
  append(path, "4,15,300,-;NVRM: Xid (PCI:0000:65:00): 31, pid=1234, name=python3, Ch 8\n"
               "garbage\n");
  batch = reader.read(100);
  ASSERT_EQ(batch.records.size(), 1u);
  EXPECT_FALSE(batch.records[0].backlog);
  EXPECT_EQ(batch.lost, 3u);
  EXPECT_EQ(batch.malformed, 1u);
}

TEST_F(KmsgReaderTest, ReadsAtMostTheLimitPerCallAndTheRestNextTime) {
  const auto path = dir_ / "kmsg";
  std::string text;
  for (int seq = 1; seq <= 10; ++seq)
    text += "6," + std::to_string(seq) + ",0,-;line\n";
  append(path, text);
  KmsgReader reader(path.string());
  std::size_t total = 0;
  for (int call = 0; call < 5; ++call)
    total += reader.read(3).records.size();
  EXPECT_EQ(total, 10u);
}

TEST_F(KmsgReaderTest, AFifoStandInWithWritersComingAndGoing) {
  const auto path = dir_ / "kmsg.fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  KmsgReader reader(path.string());
  EXPECT_TRUE(reader.read(10).records.empty()); // no writer yet: nothing, never blocks
  EXPECT_TRUE(reader.healthy());
  for (int round = 0; round < 2; ++round) {
    const int writer = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    ASSERT_GE(writer, 0);
    const std::string record = "4," + std::to_string(20 + round) +
                               ",1,-;NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n";
    ASSERT_EQ(::write(writer, record.data(), record.size()), static_cast<ssize_t>(record.size()));
    ::close(writer);
    const auto batch = reader.read(10);
    ASSERT_EQ(batch.records.size(), 1u) << round;
    EXPECT_FALSE(batch.records[0].backlog);
    EXPECT_EQ(batch.records[0].record.seq, 20u + round);
  }
}

TEST_F(KmsgReaderTest, AMissingLogIsUnhealthyAndRetriedLater) {
  const auto path = dir_ / "later";
  KmsgReader reader(path.string());
  reader.read(10);
  EXPECT_FALSE(reader.healthy());
  EXPECT_NE(reader.error().find("cannot open"), std::string::npos) << reader.error();
  append(path, "6,1,1,-;hello\n");
  for (unsigned call = 0; call < KmsgReader::kReopenAfterCalls; ++call)
    EXPECT_TRUE(reader.read(10).records.empty());
  const auto batch = reader.read(10);
  EXPECT_TRUE(reader.healthy());
  ASSERT_EQ(batch.records.size(), 1u);
  EXPECT_EQ(batch.records[0].record.message, "hello");
}

TEST(KmsgReaderDevice, RealKmsgIsReadRecordByRecordWithoutBlocking) {
  KmsgReader reader("/dev/kmsg");
  const auto batch = reader.read(50);
  if (!reader.healthy())
    GTEST_SKIP() << "cannot read /dev/kmsg here: " << reader.error();
  EXPECT_EQ(batch.malformed, 0u);
  for (std::size_t i = 1; i < batch.records.size(); ++i)
    EXPECT_GT(batch.records[i].record.seq, batch.records[i - 1].record.seq);
}

} // namespace
} // namespace neutracer
