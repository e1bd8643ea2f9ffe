// SPDX-License-Identifier: Apache-2.0
// End to end, as root: the real daemon loads the fake NVML library, whose per-process
// utilization samples come from a file this test writes (FAKE_NVML_PROCESS_UTILIZATION, stamped
// with the wall clock at each query), and integrates them into busy GPU time of the traced
// stand-in process. Accounting mode is on for the fake's GPU 0 (FAKE_NVML_ACCOUNTING).
#include <chrono>
#include <cstdlib>
#include <gtest/gtest.h>
#include <thread>

#include "e2e_fixture.h"

namespace neutracer::test {
namespace {

constexpr const char *kBusy = "neutracer_process_gpu_busy_seconds_total";
constexpr const char *kMemoryBusy = "neutracer_process_gpu_memory_busy_seconds_total";

class GpuTimeE2E : public DaemonE2E {
protected:
  std::string config_yaml() const override {
    return "nvml:\n  library: \"" NEUTRACER_FAKE_NVML "\"\n";
  }

  // The daemon inherits the environment: the fake reads it at each call.
  void SetUp() override {
    samples_ = fs::temp_directory_path() / ("neutracer-gpu-time-" + std::to_string(::getpid()));
    fs::remove(samples_);
    ::setenv("FAKE_NVML_PROCESS_UTILIZATION", samples_.c_str(), 1);
    ::setenv("FAKE_NVML_ACCOUNTING", "1", 1);
    DaemonE2E::SetUp();
  }
  void TearDown() override {
    DaemonE2E::TearDown();
    ::unsetenv("FAKE_NVML_PROCESS_UTILIZATION");
    ::unsetenv("FAKE_NVML_ACCOUNTING");
    fs::remove(samples_);
  }

  fs::path samples_;
};

TEST_F(GpuTimeE2E, ATracedProcessBusyOnAGpuGetsBusySecondsThatGoWithIt) {
  auto scenario = run_scenario({}, {"alloc:1048576:1"});
  ASSERT_FALSE(scenario.pid.empty());
  wait_scans(2);
  auto s = scrape();
  EXPECT_EQ(value(s, "neutracer_collector_up", {{"collector", "nvml_process_utilization"}}), 1)
      << log();
  // Traced, but never busy on a GPU: no series.
  EXPECT_EQ(value(s, kBusy, {{"pid", scenario.pid}}), -1);
  EXPECT_EQ(value(s, "neutracer_process_gpu_accounting_utilization_ratio", {{"pid", scenario.pid}}),
            -1);

  // The stand-in is now 50 % busy on GPU 1 and 30 % on GPU 0; pid 1 (never a stand-in, not
  // traced) keeps GPU 0 busy too.
  const auto written = std::chrono::steady_clock::now();
  std::ofstream(samples_) << "1 " << scenario.pid << " 50 20\n"
                          << "0 " << scenario.pid << " 30 10\n"
                          << "0 1 100 100\n";
  const std::vector<std::pair<std::string, std::string>> on_gpu1{
      {"pid", scenario.pid}, {"comm", kComm}, {"gpu", "1"}};
  ASSERT_TRUE(eventually([&] { return value(scrape(), kBusy, on_gpu1) > 0; }, 10s)) << log();
  s = scrape();
  const double first = value(s, kBusy, on_gpu1);
  std::this_thread::sleep_for(2s);
  s = scrape();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - written).count();
  const double busy = value(s, kBusy, on_gpu1);
  // Stamped at each query, so the counter follows the wall clock at 50 %: it can run ahead of
  // the time since the samples appeared by the first answer's one scan interval (0.1 s) only.
  EXPECT_GT(busy - first, 0.5 * 2 * 0.5) << log();
  EXPECT_LE(busy, 0.5 * elapsed + 0.5 * 0.1 + 1e-9);
  // Memory and SM integrate the same periods: 20 % against 50 %.
  EXPECT_NEAR(value(s, kMemoryBusy, on_gpu1) / busy, 0.4, 1e-9);
  EXPECT_GT(value(s, kBusy, {{"pid", scenario.pid}, {"gpu", "0"}}), 0);
  EXPECT_EQ(value(s, kBusy, {{"pid", "1"}}), -1); // not traced

  // GPU 0 keeps accounting records; GPU 1 has accounting off.
  EXPECT_DOUBLE_EQ(value(s, "neutracer_process_gpu_accounting_utilization_ratio",
                         {{"pid", scenario.pid}, {"gpu", "0"}}),
                   0.3);
  EXPECT_DOUBLE_EQ(value(s, "neutracer_process_gpu_accounting_max_memory_bytes",
                         {{"pid", scenario.pid}, {"gpu", "0"}}),
                   805306368.0);
  EXPECT_EQ(value(s, "neutracer_process_gpu_accounting_utilization_ratio",
                  {{"pid", scenario.pid}, {"gpu", "1"}}),
            -1);

  finish(scenario);
  wait_scans(3);
  s = scrape();
  EXPECT_EQ(value(s, kBusy, {{"pid", scenario.pid}}), -1);
  EXPECT_EQ(value(s, "neutracer_process_gpu_accounting_max_memory_bytes", {{"pid", scenario.pid}}),
            -1);
}

class GpuTimeUnsupportedE2E : public DaemonE2E {
protected:
  std::string config_yaml() const override {
    return "nvml:\n  library: \"" NEUTRACER_FAKE_NVML "\"\n";
  }
  void SetUp() override {
    ::setenv("FAKE_NVML_PROCESS_UTILIZATION_RESULT", "3", 1); // NVML_ERROR_NOT_SUPPORTED
    DaemonE2E::SetUp();
  }
  void TearDown() override {
    DaemonE2E::TearDown();
    ::unsetenv("FAKE_NVML_PROCESS_UTILIZATION_RESULT");
  }
};

TEST_F(GpuTimeUnsupportedE2E, GpusWithoutTheQueryLeaveTheCollectorOutAndAreAskedOnce) {
  wait_scans(5);
  const auto s = scrape();
  EXPECT_EQ(value(s, "neutracer_collector_up", {{"collector", "nvml"}}), 1) << log();
  EXPECT_EQ(value(s, "neutracer_collector_up", {{"collector", "nvml_process_utilization"}}), -1);
  EXPECT_EQ(value(s, "neutracer_nvml_errors_total", {{"call", "nvmlDeviceGetProcessUtilization"}}),
            2); // once per GPU
  EXPECT_NE(log().find("nvmlDeviceGetProcessUtilization on GPU 0 is not available"),
            std::string::npos)
      << log();
}

} // namespace
} // namespace neutracer::test
