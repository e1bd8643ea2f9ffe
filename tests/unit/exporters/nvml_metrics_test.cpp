// SPDX-License-Identifier: Apache-2.0
#include "exporters/nvml_metrics.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "metric_lookup.h"

namespace neutracer {
namespace {

using test::family;
using test::label;

NvmlDeviceSample full_device() {
  NvmlDeviceSample s;
  s.device = {0, "GPU-8c1e0f3a-1111-2222-3333-444455556666", "NVIDIA H100 80GB HBM3",
              "00000000:18:00.0", 2u};
  s.gpu_utilization_ratio = 0.87;
  s.memory_bandwidth_utilization_ratio = 0.33;
  s.memory_used_bytes = 1073741824;
  s.memory_total_bytes = 85899345920;
  s.temperature_celsius = 61;
  s.power_watts = 455.25;
  s.energy_joules = 9876543.21;
  s.pcie_tx_bytes_per_second = 2097152;
  s.pcie_rx_bytes_per_second = 1024000;
  s.nvlink_tx_bytes = 3072;
  s.nvlink_rx_bytes = 1073741824;
  s.processes = std::vector<NvmlProcessUsage>{{100, 2000}, {300, 1000}};
  return s;
}

NvmlSnapshot snapshot_of(std::vector<NvmlDeviceSample> devices) {
  NvmlSnapshot snapshot;
  snapshot.in_use = true;
  snapshot.driver_version = "580.95.05";
  snapshot.devices = std::move(devices);
  snapshot.errors_by_call = {{"nvmlDeviceGetPowerUsage", 1}, {"nvmlInit", 0}};
  return snapshot;
}

// The value of the one sample of `name` whose labels include every pair in `labels`.
double value(const std::vector<MetricFamily> &families, const std::string &name,
             const Labels &labels) {
  const auto &f = family(families, name);
  const Sample *found = nullptr;
  for (const auto &sample : f.samples) {
    bool matches = true;
    for (const auto &[key, expected] : labels)
      matches = matches && label(sample.labels, key) == expected;
    if (matches) {
      EXPECT_EQ(found, nullptr) << "several samples of " << name << " match";
      found = &sample;
    }
  }
  if (found == nullptr) {
    ADD_FAILURE() << "no sample of " << name << " matches";
    return -1;
  }
  return found->value;
}

TEST(NvmlMetrics, NothingWhenNvmlIsNotInUse) {
  EXPECT_TRUE(nvml_families(NvmlSnapshot{}).empty());
  auto not_in_use = snapshot_of({full_device()});
  not_in_use.in_use = false;
  EXPECT_TRUE(nvml_families(not_in_use).empty());
}

TEST(NvmlMetrics, EveryFamilyInAFixedOrderWithTypes) {
  const auto families = nvml_families(snapshot_of({}));
  const std::vector<std::pair<std::string, MetricType>> expected = {
      {"neutracer_gpu_info", MetricType::gauge},
      {"neutracer_gpu_utilization_ratio", MetricType::gauge},
      {"neutracer_gpu_memory_bandwidth_utilization_ratio", MetricType::gauge},
      {"neutracer_gpu_memory_used_bytes", MetricType::gauge},
      {"neutracer_gpu_memory_total_bytes", MetricType::gauge},
      {"neutracer_gpu_temperature_celsius", MetricType::gauge},
      {"neutracer_gpu_power_watts", MetricType::gauge},
      {"neutracer_gpu_energy_joules_total", MetricType::counter},
      {"neutracer_gpu_pcie_throughput_bytes_per_second", MetricType::gauge},
      {"neutracer_gpu_nvlink_data_bytes_total", MetricType::counter},
      {"neutracer_nvml_process_memory_used_bytes", MetricType::gauge},
      {"neutracer_nvml_errors_total", MetricType::counter}};
  ASSERT_EQ(families.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(families[i].name, expected[i].first);
    EXPECT_EQ(families[i].type, expected[i].second) << families[i].name;
    EXPECT_FALSE(families[i].help.empty()) << families[i].name;
  }
  // With no devices only the error counter has samples.
  for (std::size_t i = 0; i + 1 < families.size(); ++i)
    EXPECT_TRUE(families[i].samples.empty()) << families[i].name;
}

TEST(NvmlMetrics, EachValueWithItsLabels) {
  const auto families = nvml_families(snapshot_of({full_device()}));
  const Labels gpu0 = {{"gpu", "0"}};
  EXPECT_EQ(value(families, "neutracer_gpu_info",
                  {{"gpu", "0"},
                   {"uuid", "GPU-8c1e0f3a-1111-2222-3333-444455556666"},
                   {"name", "NVIDIA H100 80GB HBM3"},
                   {"pci_bus_id", "00000000:18:00.0"},
                   {"driver_version", "580.95.05"}}),
            1);
  EXPECT_EQ(family(families, "neutracer_gpu_info").samples[0].labels.size(), 5u);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_utilization_ratio", gpu0), 0.87);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_memory_bandwidth_utilization_ratio", gpu0), 0.33);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_memory_used_bytes", gpu0), 1073741824);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_memory_total_bytes", gpu0), 85899345920);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_temperature_celsius", gpu0), 61);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_power_watts", gpu0), 455.25);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_energy_joules_total", gpu0), 9876543.21);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_pcie_throughput_bytes_per_second",
                         {{"gpu", "0"}, {"direction", "tx"}}),
                   2097152);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_pcie_throughput_bytes_per_second",
                         {{"gpu", "0"}, {"direction", "rx"}}),
                   1024000);
  EXPECT_DOUBLE_EQ(
      value(families, "neutracer_gpu_nvlink_data_bytes_total", {{"gpu", "0"}, {"direction", "tx"}}),
      3072);
  EXPECT_DOUBLE_EQ(
      value(families, "neutracer_gpu_nvlink_data_bytes_total", {{"gpu", "0"}, {"direction", "rx"}}),
      1073741824);
  EXPECT_DOUBLE_EQ(
      value(families, "neutracer_nvml_process_memory_used_bytes", {{"gpu", "0"}, {"pid", "100"}}),
      2000);
  EXPECT_DOUBLE_EQ(
      value(families, "neutracer_nvml_process_memory_used_bytes", {{"gpu", "0"}, {"pid", "300"}}),
      1000);
  EXPECT_DOUBLE_EQ(
      value(families, "neutracer_nvml_errors_total", {{"call", "nvmlDeviceGetPowerUsage"}}), 1);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_nvml_errors_total", {{"call", "nvmlInit"}}), 0);
}

TEST(NvmlMetrics, MissingValuesLeaveOutOnlyTheirSeries) {
  auto partial = full_device();
  partial.device.index = 1;
  partial.power_watts.reset();
  partial.pcie_rx_bytes_per_second.reset();
  partial.nvlink_tx_bytes.reset();
  partial.nvlink_rx_bytes.reset();
  partial.processes.reset();
  const auto families = nvml_families(snapshot_of({full_device(), partial}));

  EXPECT_EQ(family(families, "neutracer_gpu_info").samples.size(), 2u);
  EXPECT_EQ(family(families, "neutracer_gpu_temperature_celsius").samples.size(), 2u);
  const auto &power = family(families, "neutracer_gpu_power_watts").samples;
  ASSERT_EQ(power.size(), 1u);
  EXPECT_EQ(label(power[0].labels, "gpu"), "0");
  const auto &pcie = family(families, "neutracer_gpu_pcie_throughput_bytes_per_second").samples;
  EXPECT_EQ(pcie.size(), 3u);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_pcie_throughput_bytes_per_second",
                         {{"gpu", "1"}, {"direction", "tx"}}),
                   2097152);
  EXPECT_EQ(family(families, "neutracer_gpu_nvlink_data_bytes_total").samples.size(), 2u);
  for (const auto &sample : family(families, "neutracer_nvml_process_memory_used_bytes").samples)
    EXPECT_EQ(label(sample.labels, "gpu"), "0");
}

TEST(NvmlMetrics, RendersAsPrometheusText) {
  std::ostringstream text;
  render_text(nvml_families(snapshot_of({full_device()})), text);
  const auto body = text.str();
  EXPECT_NE(body.find("# TYPE neutracer_gpu_energy_joules_total counter\n"), std::string::npos);
  EXPECT_NE(body.find("neutracer_gpu_power_watts{gpu=\"0\"} 455.25\n"), std::string::npos);
  EXPECT_NE(body.find("neutracer_nvml_process_memory_used_bytes{gpu=\"0\",pid=\"100\"} 2000\n"),
            std::string::npos);
}

} // namespace
} // namespace neutracer
