// SPDX-License-Identifier: Apache-2.0
// NvmlLibrary and NvmlSampler over fake libnvidia-ml builds (tests/fakes/fake_nvml.c): the
// dlopen path, symbol versions, struct layouts and argument constants end to end.
#include "nvml/nvml_library.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>

#include "exporters/nvml_metrics.h"
#include "metric_lookup.h"
#include "nvml/nvml_sampler.h"

namespace neutracer {
namespace {

using test::family;
using test::label;

// Keeps the fake loaded across NvmlLibrary's dlclose, so its init depth can be read after.
class FakeHandle {
public:
  explicit FakeHandle(const char *path) : handle_(dlopen(path, RTLD_NOW | RTLD_LOCAL)) {}
  ~FakeHandle() {
    if (handle_ != nullptr)
      dlclose(handle_);
  }
  FakeHandle(const FakeHandle &) = delete;
  FakeHandle &operator=(const FakeHandle &) = delete;
  int init_depth() const {
    const auto depth = reinterpret_cast<int (*)()>(dlsym(handle_, "fake_nvml_init_depth"));
    return depth != nullptr ? depth() : -1;
  }

private:
  void *handle_;
};

std::unique_ptr<NvmlApi> load(const char *path) {
  auto nvml = open_nvml(path);
  EXPECT_NE(nvml, nullptr) << path;
  return nvml;
}

double value(const std::vector<MetricFamily> &families, const std::string &name,
             const std::string &gpu, const std::string &extra_label = "",
             const std::string &extra_value = "") {
  for (const auto &sample : family(families, name).samples)
    if (label(sample.labels, "gpu") == gpu &&
        (extra_label.empty() || label(sample.labels, extra_label) == extra_value))
      return sample.value;
  ADD_FAILURE() << "no " << name << " for gpu " << gpu << " " << extra_label << "=" << extra_value;
  return -1;
}

bool has_series(const std::vector<MetricFamily> &families, const std::string &name,
                const std::string &gpu) {
  for (const auto &sample : family(families, name).samples)
    if (label(sample.labels, "gpu") == gpu)
      return true;
  return false;
}

double errors(const std::vector<MetricFamily> &families, const std::string &call) {
  for (const auto &sample : family(families, "neutracer_nvml_errors_total").samples)
    if (label(sample.labels, "call") == call)
      return sample.value;
  ADD_FAILURE() << "no error counter for " << call;
  return -1;
}

TEST(NvmlLibrary, EveryMetricFromTheFakeDriver) {
  auto nvml = load(NEUTRACER_FAKE_NVML);
  ASSERT_NE(nvml, nullptr);
  NvmlSampler sampler(*nvml);
  sampler.sample();
  const auto families = nvml_families(sampler.sample()); // a second scan: steady state

  const auto &info = family(families, "neutracer_gpu_info").samples;
  ASSERT_EQ(info.size(), 2u);
  EXPECT_EQ(info[0].labels, (Labels{{"gpu", "0"},
                                    {"uuid", "GPU-11111111-2222-3333-4444-555555555555"},
                                    {"name", "Fake H100 80GB HBM3"},
                                    {"pci_bus_id", "00000000:17:00.0"},
                                    {"driver_version", "999.88.77"}}));
  EXPECT_EQ(label(info[1].labels, "uuid"), "GPU-66666666-7777-8888-9999-000000000000");
  EXPECT_EQ(label(info[1].labels, "pci_bus_id"), "00000000:65:00.0");
  EXPECT_EQ(info[0].value, 1);

  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_utilization_ratio", "0"), 0.75);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_utilization_ratio", "1"), 0.05);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_memory_bandwidth_utilization_ratio", "0"), 0.40);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_memory_bandwidth_utilization_ratio", "1"), 0.01);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_memory_total_bytes", "0"), 85899345920.0);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_memory_used_bytes", "0"), 2147483648.0);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_memory_total_bytes", "1"), 42949672960.0);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_memory_used_bytes", "1"), 268435456.0);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_temperature_celsius", "0"), 45);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_temperature_celsius", "1"), 52);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_power_watts", "0"), 312.5);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_energy_joules_total", "0"), 123456.789);
  EXPECT_DOUBLE_EQ(value(families, "neutracer_gpu_energy_joules_total", "1"), 42);
  const auto pcie = "neutracer_gpu_pcie_throughput_bytes_per_second";
  EXPECT_DOUBLE_EQ(value(families, pcie, "0", "direction", "tx"), 1000 * 1024.0);
  EXPECT_DOUBLE_EQ(value(families, pcie, "0", "direction", "rx"), 2000 * 1024.0);
  EXPECT_DOUBLE_EQ(value(families, pcie, "1", "direction", "tx"), 300 * 1024.0);
  EXPECT_DOUBLE_EQ(value(families, pcie, "1", "direction", "rx"), 400 * 1024.0);
  const auto nvlink = "neutracer_gpu_nvlink_data_bytes_total";
  EXPECT_DOUBLE_EQ(value(families, nvlink, "0", "direction", "tx"), 5000 * 1024.0);
  EXPECT_DOUBLE_EQ(value(families, nvlink, "0", "direction", "rx"), 6000 * 1024.0);
  const auto processes = "neutracer_nvml_process_memory_used_bytes";
  EXPECT_DOUBLE_EQ(value(families, processes, "0", "pid", "4242"), 536870912.0);
  EXPECT_DOUBLE_EQ(value(families, processes, "1", "pid", "4242"), 268435456.0);
  // pid 4343's memory is NVML_VALUE_NOT_AVAILABLE: no series rather than 2^64-1 bytes.
  EXPECT_EQ(family(families, processes).samples.size(), 2u);

  const auto &devices = sampler.devices();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].minor_number, 3u);
  EXPECT_EQ(devices[1].minor_number, 1u);
  EXPECT_EQ(devices[1].uuid, "GPU-66666666-7777-8888-9999-000000000000");
}

TEST(NvmlLibrary, NotSupportedLosesOnlyThatValueAndIsCountedOnce) {
  auto nvml = load(NEUTRACER_FAKE_NVML);
  ASSERT_NE(nvml, nullptr);
  NvmlSampler sampler(*nvml);
  sampler.sample();
  sampler.sample();
  const auto families = nvml_families(sampler.sample());

  // GPU 1 supports neither power readings nor NVLink.
  EXPECT_FALSE(has_series(families, "neutracer_gpu_power_watts", "1"));
  EXPECT_FALSE(has_series(families, "neutracer_gpu_nvlink_data_bytes_total", "1"));
  EXPECT_TRUE(has_series(families, "neutracer_gpu_energy_joules_total", "1"));
  EXPECT_TRUE(has_series(families, "neutracer_gpu_temperature_celsius", "1"));
  EXPECT_EQ(errors(families, "nvmlDeviceGetPowerUsage"), 1);
  EXPECT_EQ(errors(families, "nvmlDeviceGetFieldValues"), 2); // tx and rx
  for (const auto &call : {"nvmlInit", "nvmlDeviceGetCount", "nvmlDeviceGetPcieThroughput",
                           "nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetTemperature"})
    EXPECT_EQ(errors(families, call), 0) << call;
}

TEST(NvmlLibrary, ReadsR535ThirtyTwoByteProcessEntries) {
  auto nvml = load(NEUTRACER_FAKE_NVML_R535);
  ASSERT_NE(nvml, nullptr);
  NvmlSampler sampler(*nvml);
  const auto families = nvml_families(sampler.sample());
  const auto processes = "neutracer_nvml_process_memory_used_bytes";
  EXPECT_EQ(family(families, processes).samples.size(), 2u);
  EXPECT_DOUBLE_EQ(value(families, processes, "0", "pid", "4242"), 536870912.0);
  EXPECT_DOUBLE_EQ(value(families, processes, "1", "pid", "4242"), 268435456.0);
  EXPECT_EQ(errors(families, "nvmlDeviceGetComputeRunningProcesses"), 0);
}

TEST(NvmlLibrary, OlderDriverFallsBackToV2AndLacksEnergy) {
  auto nvml = load(NEUTRACER_FAKE_NVML_OLD);
  ASSERT_NE(nvml, nullptr);
  NvmlSampler sampler(*nvml);
  sampler.sample();
  const auto families = nvml_families(sampler.sample());
  EXPECT_DOUBLE_EQ(value(families, "neutracer_nvml_process_memory_used_bytes", "0", "pid", "4242"),
                   536870912.0);
  EXPECT_TRUE(family(families, "neutracer_gpu_energy_joules_total").samples.empty());
  // A function the library lacks is counted once per device, like NOT_SUPPORTED.
  EXPECT_EQ(errors(families, "nvmlDeviceGetTotalEnergyConsumption"), 2);
}

TEST(NvmlLibrary, ReportsTheFileAndSymbolsItResolved) {
  auto loaded = NvmlLibrary::load(NEUTRACER_FAKE_NVML_OLD);
  ASSERT_NE(loaded.library, nullptr) << loaded.error;
  EXPECT_EQ(loaded.library->file(), NEUTRACER_FAKE_NVML_OLD);
  const auto report = loaded.library->symbol_report();
  EXPECT_NE(report.find("nvmlDeviceGetComputeRunningProcesses_v2"), std::string::npos);
  EXPECT_NE(report.find("missing: nvmlDeviceGetTotalEnergyConsumption"), std::string::npos);
}

TEST(NvmlLibrary, ANonexistentLibraryMeansNoNvmlSeriesAndNoError) {
  EXPECT_EQ(open_nvml("/nonexistent/libnvidia-ml.so.1"), nullptr);
  EXPECT_EQ(open_nvml("libnvidia-ml-not-installed.so.1"), nullptr);
  const auto loaded = NvmlLibrary::load("/nonexistent/libnvidia-ml.so.1");
  EXPECT_EQ(loaded.library, nullptr);
  EXPECT_NE(loaded.error.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
  // Without a library the loop has no sampler and publishes the default snapshot.
  EXPECT_TRUE(nvml_families(NvmlSnapshot{}).empty());
}

TEST(NvmlLibrary, AFileThatIsNotALibraryIsRefused) {
  EXPECT_EQ(open_nvml(NEUTRACER_SOURCE_DIR "/README.md"), nullptr);
}

TEST(NvmlLibrary, InitFailureKeepsOnlyTheErrorCounter) {
  FakeHandle fake(NEUTRACER_FAKE_NVML);
  ASSERT_EQ(setenv("FAKE_NVML_INIT_RESULT", "9", 1), 0); // NVML_ERROR_DRIVER_NOT_LOADED
  auto nvml = load(NEUTRACER_FAKE_NVML);
  ASSERT_NE(nvml, nullptr);
  NvmlSampler sampler(*nvml);
  const auto families = nvml_families(sampler.sample());
  unsetenv("FAKE_NVML_INIT_RESULT");

  EXPECT_EQ(errors(families, "nvmlInit"), 1);
  for (const auto &f : families)
    EXPECT_TRUE(f.name == "neutracer_nvml_errors_total" || f.samples.empty()) << f.name;
  nvml.reset();
  EXPECT_EQ(fake.init_depth(), 0); // nothing to shut down
}

TEST(NvmlLibrary, ShutsNvmlDownWhenDestroyed) {
  FakeHandle fake(NEUTRACER_FAKE_NVML);
  auto nvml = load(NEUTRACER_FAKE_NVML);
  ASSERT_NE(nvml, nullptr);
  NvmlSampler sampler(*nvml);
  sampler.sample();
  EXPECT_EQ(fake.init_depth(), 1);
  nvml.reset();
  EXPECT_EQ(fake.init_depth(), 0);
}

// Sets an environment variable the fake reads at each call, for one test.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::string &value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name_;
};

// The fake's per-process utilization file: "GPU PID SM% MEMORY% STAMP_US" lines.
class UtilizationFile {
public:
  UtilizationFile()
      : path_(std::filesystem::temp_directory_path() /
              ("fake-nvml-utilization-" + std::to_string(getpid()))),
        env_("FAKE_NVML_PROCESS_UTILIZATION", path_.string()) {}
  ~UtilizationFile() { std::filesystem::remove(path_); }
  UtilizationFile(const UtilizationFile &) = delete;
  UtilizationFile &operator=(const UtilizationFile &) = delete;
  void write(const std::string &lines) const { std::ofstream(path_) << lines; }

private:
  std::filesystem::path path_;
  ScopedEnv env_;
};

constexpr std::uint64_t kSecond = 1'000'000;
constexpr std::uint64_t kT0 = 1'795'804'127'000'000;

std::string line(unsigned gpu, unsigned pid, unsigned sm, unsigned memory, std::uint64_t stamp) {
  return std::to_string(gpu) + " " + std::to_string(pid) + " " + std::to_string(sm) + " " +
         std::to_string(memory) + " " + std::to_string(stamp) + "\n";
}

TEST(NvmlLibrary, ReadsProcessUtilizationSinceTheLastStamp) {
  UtilizationFile file;
  file.write(line(0, 4242, 50, 20, kT0) + line(1, 4242, 7, 3, kT0 + 5) +
             line(0, 9999, 100, 100, kT0 + 10));
  auto nvml = load(NEUTRACER_FAKE_NVML);
  ASSERT_NE(nvml, nullptr);
  ASSERT_EQ(nvml->init(), NT_NVML_SUCCESS);
  ASSERT_EQ(nvml->open_device(0), NT_NVML_SUCCESS);
  const auto all = nvml->process_utilization(0, 0);
  ASSERT_TRUE(all.ok()) << all.status;
  EXPECT_EQ(all.value,
            (std::vector<NvmlProcessUtilization>{{4242, kT0, 50, 20}, {9999, kT0 + 10, 100, 100}}));
  const auto newer = nvml->process_utilization(0, kT0);
  ASSERT_TRUE(newer.ok());
  EXPECT_EQ(newer.value, (std::vector<NvmlProcessUtilization>{{9999, kT0 + 10, 100, 100}}));
  EXPECT_EQ(nvml->process_utilization(0, kT0 + 10).status, NT_NVML_ERROR_NOT_FOUND);
}

TEST(NvmlLibrary, ProcessUtilizationBecomesBusySecondsOfTracedProcesses) {
  UtilizationFile file;
  file.write(line(0, 4242, 50, 20, kT0) + line(0, 9999, 100, 100, kT0));
  auto nvml = load(NEUTRACER_FAKE_NVML);
  ASSERT_NE(nvml, nullptr);
  std::uint64_t now = kT0 + 100'000;
  NvmlSampler sampler(*nvml, {std::chrono::milliseconds(1000), [&now] { return now; }});
  const ProcessId traced{4242, 31337};
  auto snapshot = sampler.sample({{4242, traced}});
  ASSERT_EQ(snapshot.process_gpu_time.size(), 1u); // 9999 is not traced
  EXPECT_EQ(snapshot.process_gpu_time[0].process, traced);
  EXPECT_DOUBLE_EQ(snapshot.process_gpu_time[0].sm_busy_seconds, 0.5); // first: one scan
  EXPECT_DOUBLE_EQ(snapshot.process_gpu_time[0].memory_busy_seconds, 0.2);
  EXPECT_EQ(snapshot.process_utilization_up, true);

  file.write(line(0, 4242, 80, 40, kT0 + 2 * kSecond));
  now += 2 * kSecond;
  snapshot = sampler.sample({{4242, traced}});
  EXPECT_DOUBLE_EQ(snapshot.process_gpu_time.at(0).sm_busy_seconds, 0.5 + 1.6);
  EXPECT_DOUBLE_EQ(snapshot.process_gpu_time.at(0).memory_busy_seconds, 0.2 + 0.8);
  now += kSecond; // nothing new: NOT_FOUND, no error
  snapshot = sampler.sample({{4242, traced}});
  EXPECT_DOUBLE_EQ(snapshot.process_gpu_time.at(0).sm_busy_seconds, 2.1);
  EXPECT_EQ(errors(nvml_families(snapshot), "nvmlDeviceGetProcessUtilization"), 0);
  EXPECT_EQ(snapshot.process_accounting.size(), 0u); // accounting mode is off
  EXPECT_EQ(snapshot.devices.at(0).accounting_enabled, false);
}

TEST(NvmlLibrary, ProcessUtilizationNotSupportedIsCountedOncePerGpu) {
  ScopedEnv not_supported("FAKE_NVML_PROCESS_UTILIZATION_RESULT", "3");
  auto nvml = load(NEUTRACER_FAKE_NVML);
  ASSERT_NE(nvml, nullptr);
  NvmlSampler sampler(*nvml);
  sampler.sample({{4242, ProcessId{4242, 1}}});
  const auto snapshot = sampler.sample({{4242, ProcessId{4242, 1}}});
  EXPECT_EQ(errors(nvml_families(snapshot), "nvmlDeviceGetProcessUtilization"), 2);
  EXPECT_EQ(snapshot.process_utilization_up, std::nullopt);
}

TEST(NvmlLibrary, AccountingRecordsWhereAccountingModeIsOn) {
  UtilizationFile file;
  file.write(line(0, 4242, 63, 21, kT0));
  ScopedEnv accounting("FAKE_NVML_ACCOUNTING", "1");
  auto nvml = load(NEUTRACER_FAKE_NVML);
  ASSERT_NE(nvml, nullptr);
  NvmlSampler sampler(*nvml, {std::chrono::milliseconds(1000), [] { return kT0 + 1; }});
  const ProcessId traced{4242, 31337};
  const auto snapshot = sampler.sample({{4242, traced}});
  EXPECT_EQ(snapshot.devices.at(0).accounting_enabled, true);
  EXPECT_EQ(snapshot.devices.at(1).accounting_enabled, false);
  // 4242 is listed on both GPUs; only GPU 0 keeps records.
  ASSERT_EQ(snapshot.process_accounting.size(), 1u);
  const auto &record = snapshot.process_accounting[0];
  EXPECT_EQ(record.process, traced);
  EXPECT_EQ(record.gpu, 0u);
  EXPECT_EQ(record.stats.gpu_percent, 63u);
  EXPECT_EQ(record.stats.memory_percent, 21u);
  EXPECT_EQ(record.stats.max_memory_bytes, 805306368u);
  EXPECT_TRUE(record.stats.running);
  EXPECT_EQ(errors(nvml_families(snapshot), "nvmlDeviceGetAccountingStats"), 0);
}

} // namespace
} // namespace neutracer
