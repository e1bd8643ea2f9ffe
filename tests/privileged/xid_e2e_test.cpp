// SPDX-License-Identifier: Apache-2.0
// End to end, as root: the real daemon reads the NVIDIA driver's Xid reports from a stand-in
// for /dev/kmsg (a file in its record format that the test appends to, named by
// gpu_health.kmsg_path), maps them to a GPU of the fake NVML library by PCI address and to the
// traced stand-in process the report names, and exports and journals them. Each test has its
// own daemon, stand-in log and scenario process, so other tests' processes never mix in.
#include <fstream>
#include <gtest/gtest.h>

#include "e2e_fixture.h"

namespace neutracer::test {
namespace {

constexpr const char *kXidMessageId = "5cfca864f8e64292864182eede5c1716";
constexpr const char *kXidProcessMessageId = "a108c949cbea4910901331c5231f38ad";

class XidE2E : public DaemonE2E {
protected:
  std::string config_yaml() const override {
    // The stand-in log exists before the daemon starts, with one report from "before": history
    // that must be neither counted nor journaled. The fake NVML has GPU 1 at 0000:65:00.
    std::ofstream(kmsg()) << "4,100,5000000,-;NVRM: Xid (PCI:0000:65:00): 79, GPU has fallen off "
                             "the bus.\n SUBSYSTEM=pci\n DEVICE=+pci:0000:65:00.0\n";
    return "nvml:\n  library: \"" NEUTRACER_FAKE_NVML "\"\n"
           "gpu_health:\n  kmsg_path: \"" +
           kmsg().string() + "\"\n";
  }
  bool capture_journal() const override { return true; }

  fs::path kmsg() const { return dir_ / "kmsg"; }
  void append(const std::string &records) const { std::ofstream(kmsg(), std::ios::app) << records; }

  std::vector<JournalFields> journal_with(const std::string &message_id) {
    std::vector<JournalFields> found;
    for (const auto &entry : journal_->entries())
      if (entry.count("MESSAGE_ID") && entry.at("MESSAGE_ID") == message_id)
        found.push_back(entry);
    return found;
  }
};

TEST_F(XidE2E, AnXidLineBecomesMetricsAndJournalEntriesTiedToTheTracedProcess) {
  auto scenario = run_scenario({}, {"alloc:1048576:1"});
  ASSERT_FALSE(scenario.pid.empty());
  wait_scans(2);
  auto s = scrape();
  EXPECT_EQ(value(s, "neutracer_collector_up", {{"collector", "kernel_log"}}), 1) << log();
  EXPECT_EQ(value(s, "neutracer_collector_up", {{"collector", "nvml"}}), 1);
  // The report from before the daemon started is history.
  EXPECT_EQ(value(s, "neutracer_gpu_xid_errors_total", {{"xid", "79"}}), -1);
  EXPECT_EQ(value(s, "neutracer_kernel_log_records_total", {{"result", "read"}}), 1);

  // The driver reports an MMU fault in the traced process, then one in a process that is not
  // traced (pid 1 is never a CUDA stand-in), with records 101-102 lost in between.
  append("3,101,6000000,-;NVRM: Xid (PCI:0000:65:00): 31, pid=" + scenario.pid +
         ", name=neutracer-scena, Ch 00000008, intr 10000000. MMU Fault: ENGINE GRAPHICS "
         "GPCCLIENT_T1_0 faulted @ 0x7f12_34560000. Fault is of type FAULT_PDE "
         "ACCESS_TYPE_READ\n SUBSYSTEM=pci\n"
         "3,104,6100000,-;NVRM: Xid (PCI:0000:65:00): 13, pid=1, name=init, Graphics SM Warp "
         "Exception on (GPC 0, TPC 0, SM 0)\n");
  ASSERT_TRUE(eventually(
      [&] {
        return value(scrape(), "neutracer_gpu_xid_errors_total", {{"gpu", "1"}, {"xid", "13"}}) ==
               1;
      },
      10s))
      << log();
  s = scrape();
  EXPECT_EQ(value(s, "neutracer_gpu_xid_errors_total", {{"gpu", "1"}, {"xid", "31"}}), 1);
  EXPECT_EQ(value(s, "neutracer_cuda_xid_errors_total",
                  {{"pid", scenario.pid}, {"comm", kComm}, {"gpu", "1"}, {"xid", "31"}}),
            1);
  EXPECT_EQ(value(s, "neutracer_cuda_xid_errors_total", {{"xid", "13"}}), -1); // not traced
  EXPECT_EQ(value(s, "neutracer_kernel_log_records_total", {{"result", "lost"}}), 2);

  ASSERT_TRUE(eventually([&] { return !journal_with(kXidProcessMessageId).empty(); }, 5s));
  const auto tied = journal_with(kXidProcessMessageId);
  ASSERT_EQ(tied.size(), 1u);
  EXPECT_EQ(tied[0].at("TARGET_PID"), scenario.pid);
  EXPECT_EQ(tied[0].at("TARGET_COMM"), kComm);
  EXPECT_EQ(tied[0].at("TRACED"), "1");
  EXPECT_EQ(tied[0].at("XID"), "31");
  EXPECT_EQ(tied[0].at("GPU"), "1");
  EXPECT_EQ(tied[0].at("PCI_BUS_ID"), "0000:65:00");
  EXPECT_EQ(tied[0].at("PRIORITY"), "3");
  EXPECT_NE(tied[0].at("KERNEL_MESSAGE").find("MMU Fault"), std::string::npos);
  const auto other = journal_with(kXidMessageId);
  ASSERT_EQ(other.size(), 1u); // the Xid 79 from before the start is not journaled
  EXPECT_EQ(other[0].at("XID"), "13");
  EXPECT_EQ(other[0].at("TRACED"), "0");

  // The process's series go with it; the GPU's stay.
  finish(scenario);
  wait_scans(3);
  s = scrape();
  EXPECT_EQ(value(s, "neutracer_cuda_xid_errors_total", {{"pid", scenario.pid}}), -1);
  EXPECT_EQ(value(s, "neutracer_gpu_xid_errors_total", {{"gpu", "1"}, {"xid", "31"}}), 1);
}

class XidUnreadableLogE2E : public DaemonE2E {
protected:
  std::string config_yaml() const override {
    return "gpu_health:\n  kmsg_path: \"" + (dir_ / "no-such-kmsg").string() + "\"\n";
  }
};

TEST_F(XidUnreadableLogE2E, ALogThatCannotBeReadIsACollectorDown) {
  wait_scans(2);
  const auto s = scrape();
  EXPECT_EQ(value(s, "neutracer_collector_up", {{"collector", "kernel_log"}}), 0) << log();
  EXPECT_EQ(value(s, "neutracer_collector_up", {{"collector", "cuda_tracer"}}), 1);
  EXPECT_NE(log().find("cannot open " + (dir_ / "no-such-kmsg").string()), std::string::npos)
      << log();
}

} // namespace
} // namespace neutracer::test
