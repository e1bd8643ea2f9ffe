// SPDX-License-Identifier: Apache-2.0
// End to end, as root: per-process OS metrics of a traced process (it maps the stand-in
// libcuda.so.1) that burns CPU, writes and fsyncs a file, and talks TCP over loopback.
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#include "e2e_fixture.h"

namespace neutracer::test {
namespace {

constexpr double kBurnSeconds = 1.0;
constexpr std::uint64_t kWriteBytes = 8ull << 20;
constexpr std::uint64_t kSendBytes = 1ull << 20;

// A directory on a block device: writes to tmpfs never reach the block layer.
std::string block_backed_dir() {
  for (const char *dir : {"/var/tmp", NEUTRACER_BUILD_DIR}) {
    struct statfs fs {};
    if (::statfs(dir, &fs) == 0 && fs.f_type != TMPFS_MAGIC && fs.f_type != RAMFS_MAGIC)
      return dir;
  }
  return "";
}

class OsMetricsE2E : public DaemonE2E {
protected:
  double metric(const Scrape &s, const std::string &name, const std::string &pid,
                std::vector<std::pair<std::string, std::string>> extra = {}) const {
    std::vector<std::pair<std::string, std::string>> labels{{"pid", pid}, {"comm", kComm}};
    labels.insert(labels.end(), extra.begin(), extra.end());
    return value(s, name, labels);
  }
};

TEST_F(OsMetricsE2E, CpuBlockIoAndNetworkOfATracedProcess) {
  const std::string io_dir = block_backed_dir();
  ASSERT_FALSE(io_dir.empty()) << "no block-backed directory for the fsync test";
  auto scenario = run_scenario({},
                               {"burn:" + std::to_string(int(kBurnSeconds * 1000)),
                                "fsync_write:" + std::to_string(kWriteBytes),
                                "tcp_send:" + std::to_string(kSendBytes)},
                               {"NEUTRACER_SCENARIO_IO_DIR=" + io_dir});
  const auto s = scrape();
  const auto &pid = scenario.pid;

  // CPU: the burn is measured on the thread's own CPU clock; start-up, the write and the
  // socket work add a little. On-CPU time comes from the scheduler's runtime counters (the
  // same source as /proc/<pid>/schedstat), /proc ticks are 10 ms.
  const double oncpu = metric(s, "neutracer_process_oncpu_seconds_total", pid);
  EXPECT_GE(oncpu, kBurnSeconds * 0.99);
  EXPECT_LE(oncpu, kBurnSeconds + 0.5);
  const double proc_cpu =
      metric(s, "neutracer_process_cpu_seconds_total", pid, {{"mode", "user"}}) +
      metric(s, "neutracer_process_cpu_seconds_total", pid, {{"mode", "system"}});
  EXPECT_NEAR(proc_cpu, oncpu, 0.05);
  EXPECT_GE(metric(s, "neutracer_process_offcpu_seconds_total", pid), 0.0);
  EXPECT_GE(metric(s, "neutracer_process_runqueue_wait_seconds_total", pid), 0.0);
  EXPECT_GE(metric(s, "neutracer_process_cpu_migrations_total", pid), 0.0);
  EXPECT_EQ(metric(s, "neutracer_process_threads", pid), 1);
  EXPECT_GT(metric(s, "neutracer_process_resident_memory_bytes", pid), 1 << 20);
  EXPECT_GT(metric(s, "neutracer_process_virtual_memory_bytes", pid),
            metric(s, "neutracer_process_resident_memory_bytes", pid));
  EXPECT_GT(metric(s, "neutracer_process_page_faults_total", pid, {{"type", "minor"}}), 0);

  // Block IO: fsync submits the dirty pages in the process's own context. The filesystem may
  // add a few metadata blocks; the journal commit is written by jbd2, not the process.
  const double written =
      metric(s, "neutracer_process_io_bytes_total", pid, {{"direction", "write"}});
  EXPECT_GE(written, double(kWriteBytes));
  EXPECT_LE(written, double(kWriteBytes + (1 << 20)));
  EXPECT_GE(metric(s, "neutracer_process_io_operations_total", pid, {{"direction", "write"}}), 1);
  EXPECT_GE(value(s, "neutracer_process_io_latency_seconds_count", {{"pid", pid}, {"comm", kComm}}),
            1);
  // /proc/<pid>/io counts bytes when pages are dirtied, plus the filesystem's own blocks
  // (measured: 28 KiB more on ext4).
  const double dirtied =
      metric(s, "neutracer_process_proc_io_bytes_total", pid, {{"direction", "write"}});
  EXPECT_GE(dirtied, double(kWriteBytes));
  EXPECT_LE(dirtied, double(kWriteBytes + (1 << 20)));

  // Network: both ends of the loopback connection are this process; bytes are exact, the
  // connection was closed, segments are at least one per 64 KiB sent.
  EXPECT_EQ(metric(s, "neutracer_process_network_bytes_total", pid, {{"direction", "sent"}}),
            double(kSendBytes));
  EXPECT_EQ(metric(s, "neutracer_process_network_bytes_total", pid, {{"direction", "received"}}),
            double(kSendBytes));
  EXPECT_GE(metric(s, "neutracer_process_network_packets_total", pid, {{"direction", "sent"}}),
            double(kSendBytes / (64 << 10)));
  EXPECT_EQ(metric(s, "neutracer_process_tcp_connections", pid), 0);
  EXPECT_EQ(value(s, "neutracer_os_network_source", {{"source", "tracepoint"}}), 1);
  finish(scenario);

  // Series of the exited process vanish with its CUDA series.
  wait_scans(2);
  EXPECT_EQ(metric(scrape(), "neutracer_process_oncpu_seconds_total", pid), -1);
}

} // namespace
} // namespace neutracer::test
