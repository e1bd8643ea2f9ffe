// SPDX-License-Identifier: Apache-2.0
#include "os/os_sampler.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace neutracer {
namespace {

namespace fs = std::filesystem;

// A throwaway /proc tree: <tmp>/<pid>/{stat,status,io}.
class OsSampler : public ::testing::Test {
protected:
  void SetUp() override {
    root_ = fs::path(::testing::TempDir()) / ("os_sampler_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(int pid, const std::string &file, const std::string &text) {
    fs::create_directories(root_ / std::to_string(pid));
    std::ofstream(root_ / std::to_string(pid) / file) << text;
  }

  fs::path root_;
};

constexpr const char *kStat = "100 (python3) S 1 100 100 0 -1 0 2500 0 12 0 250 50 0 0 20 0 8 0 "
                              "4242 1073741824 1000 0 0 0\n";
constexpr const char *kStatus = "Name:\tpython3\nThreads:\t8\nvoluntary_ctxt_switches:\t30\n"
                                "nonvoluntary_ctxt_switches:\t4\n";
constexpr const char *kIo = "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\n"
                            "write_bytes: 8192\ncancelled_write_bytes: 0\n";

TEST_F(OsSampler, ConvertsTicksAndPages) {
  write(100, "stat", kStat);
  write(100, "status", kStatus);
  write(100, "io", kIo);
  const auto samples = sample_processes(ProcFs(root_), {100}, 100, 4096);
  ASSERT_EQ(samples.size(), 1u);
  const auto &s = samples.at(100);
  EXPECT_EQ(s.start_ticks, 4242u);
  EXPECT_DOUBLE_EQ(s.user_cpu_seconds, 2.5);
  EXPECT_DOUBLE_EQ(s.system_cpu_seconds, 0.5);
  EXPECT_EQ(s.threads, 8u);
  EXPECT_EQ(s.resident_bytes, 1000u * 4096);
  EXPECT_EQ(s.virtual_bytes, 1073741824u);
  EXPECT_EQ(s.minor_faults, 2500u);
  EXPECT_EQ(s.major_faults, 12u);
  EXPECT_EQ(s.voluntary_ctxt_switches, 30u);
  EXPECT_EQ(s.involuntary_ctxt_switches, 4u);
  ASSERT_TRUE(s.io.has_value());
  EXPECT_EQ(s.io->read_bytes, 4096u);
  EXPECT_EQ(s.io->write_bytes, 8192u);
}

TEST_F(OsSampler, OtherTickRatesAndPageSizes) {
  write(100, "stat", kStat);
  const auto samples = sample_processes(ProcFs(root_), {100}, 1000, 65536);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_DOUBLE_EQ(samples.at(100).user_cpu_seconds, 0.25);
  EXPECT_EQ(samples.at(100).resident_bytes, 1000u * 65536);
}

TEST_F(OsSampler, UnreadableIoAndStatusLeaveFieldsEmpty) {
  write(100, "stat", kStat);
  write(100, "io", ""); // what a read without ptrace access can look like
  const auto samples = sample_processes(ProcFs(root_), {100}, 100, 4096);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_FALSE(samples.at(100).io.has_value());
  EXPECT_FALSE(samples.at(100).voluntary_ctxt_switches.has_value());
  EXPECT_EQ(samples.at(100).threads, 8u);
}

TEST_F(OsSampler, GoneAndMalformedProcessesAreLeftOut) {
  write(100, "stat", kStat);
  write(101, "stat", "101 (broken S\n");
  write(102, "status", kStatus); // no stat: exited between reads
  const auto samples = sample_processes(ProcFs(root_), {100, 101, 102, 103}, 100, 4096);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_TRUE(samples.contains(100));
}

TEST(OsSamplerPure, MakeSample) {
  ProcStat stat;
  stat.utime_ticks = 150;
  stat.stime_ticks = 25;
  stat.rss_pages = 3;
  stat.vsize_bytes = 12345;
  stat.num_threads = 2;
  stat.minor_faults = 9;
  stat.major_faults = 1;
  stat.start_ticks = 77;
  const auto sample = make_os_sample(stat, std::nullopt, std::nullopt, 100, 4096);
  EXPECT_DOUBLE_EQ(sample.user_cpu_seconds, 1.5);
  EXPECT_DOUBLE_EQ(sample.system_cpu_seconds, 0.25);
  EXPECT_EQ(sample.resident_bytes, 3u * 4096);
  EXPECT_EQ(sample.virtual_bytes, 12345u);
  EXPECT_EQ(sample.threads, 2u);
  EXPECT_EQ(sample.start_ticks, 77u);
  EXPECT_FALSE(sample.io.has_value());
  // A nonsensical tick rate does not divide by zero.
  EXPECT_DOUBLE_EQ(make_os_sample(stat, std::nullopt, std::nullopt, 0, 4096).user_cpu_seconds,
                   150.0);
}

} // namespace
} // namespace neutracer
