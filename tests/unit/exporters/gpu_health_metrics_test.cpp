// SPDX-License-Identifier: Apache-2.0
// NVML's GPU health values end to end through fake libnvidia-ml builds (tests/fakes/fake_nvml.c,
// driven by environment variables): ECC counts, row remapping, clock throttle reasons, a lost
// GPU, and an older driver's library without the newer functions. Also the collector gauge.
#include "exporters/gpu_health_metrics.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "gpuhealth/nvml_health_watch.h"
#include "metric_lookup.h"
#include "nvml/nvml_library.h"
#include "nvml/nvml_sampler.h"

namespace neutracer {
namespace {

using test::family;
using test::value;

// Sets an environment variable for one test.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name_;
};

bool has_family(const std::vector<MetricFamily> &families, const std::string &name) {
  for (const auto &f : families)
    if (f.name == name)
      return true;
  return false;
}

NvmlSnapshot sample_twice(const char *library) {
  auto nvml = open_nvml(library);
  EXPECT_NE(nvml, nullptr);
  NvmlSampler sampler(*nvml);
  sampler.sample();
  return sampler.sample();
}

TEST(NvmlHealth, EccRemappingAndThrottleFromTheFakeDriver) {
  ScopedEnv ecc("FAKE_NVML_ECC_UNCORRECTED", "4");
  ScopedEnv throttle("FAKE_NVML_THROTTLE_REASONS", "0x68"); // sw thermal, hw thermal, hw slowdown
  ScopedEnv pending("FAKE_NVML_REMAP_PENDING", "1");
  const auto families = nvml_health_families(sample_twice(NEUTRACER_FAKE_NVML));

  const auto ecc_name = "neutracer_gpu_ecc_errors_total";
  EXPECT_EQ(
      value(families, ecc_name, {{"gpu", "0"}, {"type", "uncorrected"}, {"counter", "volatile"}}),
      4);
  EXPECT_EQ(
      value(families, ecc_name, {{"gpu", "0"}, {"type", "uncorrected"}, {"counter", "aggregate"}}),
      14);
  EXPECT_EQ(
      value(families, ecc_name, {{"gpu", "0"}, {"type", "corrected"}, {"counter", "volatile"}}), 7);
  EXPECT_EQ(value(families, ecc_name, {{"gpu", "1"}}), -1); // GPU 1 has no ECC
  EXPECT_EQ(family(families, ecc_name).type, MetricType::counter);

  EXPECT_EQ(value(families, "neutracer_gpu_remapped_rows", {{"gpu", "0"}, {"type", "correctable"}}),
            2);
  EXPECT_EQ(
      value(families, "neutracer_gpu_remapped_rows", {{"gpu", "0"}, {"type", "uncorrectable"}}), 1);
  EXPECT_EQ(value(families, "neutracer_gpu_row_remap_pending", {{"gpu", "0"}}), 1);
  EXPECT_EQ(value(families, "neutracer_gpu_row_remap_pending", {{"gpu", "1"}}), 0);
  EXPECT_EQ(value(families, "neutracer_gpu_row_remap_failed", {{"gpu", "0"}}), 0);

  const auto throttle_name = "neutracer_gpu_clock_throttle_active";
  EXPECT_EQ(value(families, throttle_name, {{"gpu", "0"}, {"reason", "sw_thermal_slowdown"}}), 1);
  EXPECT_EQ(value(families, throttle_name, {{"gpu", "0"}, {"reason", "hw_thermal_slowdown"}}), 1);
  EXPECT_EQ(value(families, throttle_name, {{"gpu", "0"}, {"reason", "hw_slowdown"}}), 1);
  EXPECT_EQ(value(families, throttle_name, {{"gpu", "0"}, {"reason", "sw_power_cap"}}), 0);
  EXPECT_EQ(value(families, throttle_name, {{"gpu", "1"}, {"reason", "gpu_idle"}}), 1);
  EXPECT_EQ(family(families, throttle_name).samples.size(), 18u); // 9 reasons x 2 GPUs

  // Ampere and later remap rows: retired-page status is NOT_SUPPORTED, so no series.
  EXPECT_TRUE(family(families, "neutracer_gpu_retired_pages_pending").samples.empty());
  EXPECT_EQ(value(families, "neutracer_gpu_lost", {{"gpu", "0"}}), 0);
  EXPECT_EQ(value(families, "neutracer_nvml_function_available",
                  {{"function", "nvmlDeviceGetRemappedRows"}}),
            1);
}

TEST(NvmlHealth, ALostGpuReadsOneAndKeepsTheOtherGpu) {
  ScopedEnv lost("FAKE_NVML_LOST_GPU", "1");
  auto nvml = open_nvml(NEUTRACER_FAKE_NVML);
  ASSERT_NE(nvml, nullptr);
  NvmlSampler sampler(*nvml);
  NvmlHealthWatch watch;
  auto snapshot = sampler.sample();
  const auto entries = watch.update(snapshot);
  const auto families = nvml_health_families(snapshot);
  EXPECT_EQ(value(families, "neutracer_gpu_lost", {{"gpu", "1"}}), 1);
  EXPECT_EQ(value(families, "neutracer_gpu_lost", {{"gpu", "0"}}), 0);
  EXPECT_EQ(value(families, "neutracer_gpu_clock_throttle_active", {{"gpu", "1"}}), -1);
  EXPECT_GE(value(families, "neutracer_gpu_clock_throttle_active", {{"gpu", "0"}}), 0);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].priority, 2);
  EXPECT_NE(entries[0].message.find("GPU 1 (00000000:65:00.0) is lost"), std::string::npos);
  // Announced once while it stays lost.
  EXPECT_TRUE(watch.update(sampler.sample()).empty());
  EXPECT_EQ(snapshot.errors_by_call.at("nvmlDeviceGetUtilizationRates"), 1u);
}

TEST(NvmlHealth, OlderDriverLeavesTheMissingFamiliesOut) {
  const auto families = nvml_health_families(sample_twice(NEUTRACER_FAKE_NVML_OLD));
  EXPECT_FALSE(has_family(families, "neutracer_gpu_remapped_rows"));
  EXPECT_FALSE(has_family(families, "neutracer_gpu_row_remap_pending"));
  EXPECT_FALSE(has_family(families, "neutracer_gpu_clock_throttle_active"));
  EXPECT_TRUE(has_family(families, "neutracer_gpu_ecc_errors_total"));
  const auto available = "neutracer_nvml_function_available";
  EXPECT_EQ(value(families, available, {{"function", "nvmlDeviceGetRemappedRows"}}), 0);
  EXPECT_EQ(value(families, available, {{"function", "nvmlDeviceGetCurrentClocksThrottleReasons"}}),
            0);
  EXPECT_EQ(value(families, available, {{"function", "nvmlDeviceGetTotalEccErrors"}}), 1);
}

TEST(NvmlHealth, ThrottleMaskUnderItsPreR535Name) {
  ScopedEnv throttle("FAKE_NVML_THROTTLE_REASONS", "4");
  const auto families = nvml_health_families(sample_twice(NEUTRACER_FAKE_NVML_R535));
  EXPECT_EQ(value(families, "neutracer_gpu_clock_throttle_active",
                  {{"gpu", "0"}, {"reason", "sw_power_cap"}}),
            1);
}

TEST(NvmlHealth, NothingWithoutNvml) { EXPECT_TRUE(nvml_health_families(NvmlSnapshot{}).empty()); }

} // namespace
} // namespace neutracer
