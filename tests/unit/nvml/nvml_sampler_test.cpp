// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_sampler.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace neutracer {
namespace {

// One scripted device: each query answers `status_of[call]` (success by default) and counts
// how often it was asked.
struct ScriptedDevice {
  std::string uuid, name, pci_bus_id;
  unsigned minor = 0;
  NvmlMemory memory;
  NvmlUtilization utilization;
  unsigned celsius = 0, milliwatts = 0;
  std::uint64_t millijoules = 0;
  unsigned pcie_tx_kib = 0, pcie_rx_kib = 0;
  std::uint64_t nvlink_tx_kib = 0, nvlink_rx_kib = 0;
  std::vector<NvmlProcessMemory> processes;
  std::uint64_t ecc_uncorrected_volatile = 0;
  NvmlRemappedRows remapped;
  std::uint64_t throttle = 0;
  // Per-process utilization as NVML keeps it: a query answers the samples stamped after its
  // lastSeenTimeStamp (recorded in last_seen_asked), NOT_FOUND when there are none.
  std::vector<NvmlProcessUtilization> utilization_samples;
  std::vector<std::uint64_t> last_seen_asked;
  bool accounting = false;
  std::map<std::uint32_t, NvmlAccountingStats> accounting_records;
  std::vector<std::uint32_t> accounting_asked;
  int open_status = NT_NVML_SUCCESS;
  std::map<NvmlCall, int> status_of;
  std::map<NvmlCall, int> asked;
};

class ScriptedNvml : public NvmlApi {
public:
  std::vector<int> init_results; // consumed in order; success once exhausted
  int init_calls = 0;
  int count_status = NT_NVML_SUCCESS;
  std::vector<ScriptedDevice> devices;

  int init() override {
    const int status = init_calls < static_cast<int>(init_results.size())
                           ? init_results[static_cast<std::size_t>(init_calls)]
                           : NT_NVML_SUCCESS;
    ++init_calls;
    return status;
  }
  NvmlResult<std::string> driver_version() override { return {NT_NVML_SUCCESS, "580.95.05"}; }
  NvmlResult<unsigned> device_count() override {
    return {count_status, static_cast<unsigned>(devices.size())};
  }
  int open_device(unsigned index) override { return devices.at(index).open_status; }
  NvmlResult<std::string> uuid(unsigned i) override {
    return answer(i, NvmlCall::uuid, at(i).uuid);
  }
  NvmlResult<std::string> name(unsigned i) override {
    return answer(i, NvmlCall::name, at(i).name);
  }
  NvmlResult<std::string> pci_bus_id(unsigned i) override {
    return answer(i, NvmlCall::pci_info, at(i).pci_bus_id);
  }
  NvmlResult<unsigned> minor_number(unsigned i) override {
    return answer(i, NvmlCall::minor_number, at(i).minor);
  }
  NvmlResult<NvmlMemory> memory(unsigned i) override {
    return answer(i, NvmlCall::memory_info, at(i).memory);
  }
  NvmlResult<NvmlUtilization> utilization(unsigned i) override {
    return answer(i, NvmlCall::utilization, at(i).utilization);
  }
  NvmlResult<unsigned> temperature_celsius(unsigned i) override {
    return answer(i, NvmlCall::temperature, at(i).celsius);
  }
  NvmlResult<unsigned> power_milliwatts(unsigned i) override {
    return answer(i, NvmlCall::power_usage, at(i).milliwatts);
  }
  NvmlResult<std::uint64_t> energy_millijoules(unsigned i) override {
    return answer(i, NvmlCall::energy, at(i).millijoules);
  }
  NvmlResult<unsigned> pcie_kib_per_second(unsigned i, NvmlDirection d) override {
    return answer(i, NvmlCall::pcie_throughput,
                  d == NvmlDirection::tx ? at(i).pcie_tx_kib : at(i).pcie_rx_kib);
  }
  NvmlResult<std::uint64_t> nvlink_data_kib(unsigned i, NvmlDirection d) override {
    return answer(i, NvmlCall::field_values,
                  d == NvmlDirection::tx ? at(i).nvlink_tx_kib : at(i).nvlink_rx_kib);
  }
  NvmlResult<std::vector<NvmlProcessMemory>> compute_processes(unsigned i) override {
    return answer(i, NvmlCall::compute_processes, at(i).processes);
  }

  NvmlResult<std::uint64_t> ecc_errors(unsigned i, NvmlEccType type, NvmlEccCounter) override {
    return answer(i, NvmlCall::ecc_errors,
                  type == NvmlEccType::uncorrected ? at(i).ecc_uncorrected_volatile : 0);
  }
  NvmlResult<NvmlRemappedRows> remapped_rows(unsigned i) override {
    return answer(i, NvmlCall::remapped_rows, at(i).remapped);
  }
  NvmlResult<bool> retired_pages_pending(unsigned i) override {
    return answer(i, NvmlCall::retired_pages_pending, false);
  }
  NvmlResult<std::uint64_t> throttle_reasons(unsigned i) override {
    return answer(i, NvmlCall::throttle_reasons, at(i).throttle);
  }

  NvmlResult<std::vector<NvmlProcessUtilization>>
  process_utilization(unsigned i, std::uint64_t last_seen_us) override {
    at(i).last_seen_asked.push_back(last_seen_us);
    std::vector<NvmlProcessUtilization> newer;
    for (const auto &sample : at(i).utilization_samples)
      if (sample.timestamp_us > last_seen_us)
        newer.push_back(sample);
    auto result = answer(i, NvmlCall::process_utilization, newer);
    if (result.ok() && newer.empty())
      result.status = NT_NVML_ERROR_NOT_FOUND;
    return result;
  }
  NvmlResult<bool> accounting_mode(unsigned i) override {
    return answer(i, NvmlCall::accounting_mode, at(i).accounting);
  }
  NvmlResult<NvmlAccountingStats> accounting_stats(unsigned i, std::uint32_t pid) override {
    at(i).accounting_asked.push_back(pid);
    const auto record = at(i).accounting_records.find(pid);
    auto result =
        answer(i, NvmlCall::accounting_stats,
               record != at(i).accounting_records.end() ? record->second : NvmlAccountingStats{});
    if (result.ok() && record == at(i).accounting_records.end())
      result.status = NT_NVML_ERROR_NOT_FOUND;
    return result;
  }

  ScriptedDevice &at(unsigned i) { return devices.at(i); }

private:
  template <typename T> NvmlResult<T> answer(unsigned i, NvmlCall call, T value) {
    ++at(i).asked[call];
    const int status = at(i).status_of.contains(call) ? at(i).status_of[call] : NT_NVML_SUCCESS;
    return {status, status == NT_NVML_SUCCESS ? value : T{}};
  }
};

ScriptedDevice h100() {
  ScriptedDevice d;
  d.uuid = "GPU-8c1e0f3a-1111-2222-3333-444455556666";
  d.name = "NVIDIA H100 80GB HBM3";
  d.pci_bus_id = "00000000:18:00.0";
  d.minor = 2;
  d.memory = {85899345920, 1073741824};
  d.utilization = {87, 33};
  d.celsius = 61;
  d.milliwatts = 455250;
  d.millijoules = 9876543210;
  d.pcie_tx_kib = 2048;
  d.pcie_rx_kib = 1000;
  d.nvlink_tx_kib = 3;
  d.nvlink_rx_kib = 1048576;
  d.processes = {{300, 1000}, {100, 2000}};
  return d;
}

std::uint64_t errors(const NvmlSnapshot &snapshot, const std::string &call) {
  return snapshot.errors_by_call.at(call);
}

TEST(NvmlSampler, ConvertsEveryValueToBaseUnits) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  NvmlSampler sampler(nvml);
  const auto snapshot = sampler.sample();

  ASSERT_TRUE(snapshot.in_use);
  EXPECT_EQ(snapshot.driver_version, "580.95.05");
  ASSERT_EQ(snapshot.devices.size(), 1u);
  const auto &s = snapshot.devices[0];
  EXPECT_EQ(s.device, (NvmlDevice{0, "GPU-8c1e0f3a-1111-2222-3333-444455556666",
                                  "NVIDIA H100 80GB HBM3", "00000000:18:00.0", 2u}));
  EXPECT_DOUBLE_EQ(*s.gpu_utilization_ratio, 0.87);
  EXPECT_DOUBLE_EQ(*s.memory_bandwidth_utilization_ratio, 0.33);
  EXPECT_EQ(*s.memory_total_bytes, 85899345920u);
  EXPECT_EQ(*s.memory_used_bytes, 1073741824u);
  EXPECT_DOUBLE_EQ(*s.temperature_celsius, 61);
  EXPECT_DOUBLE_EQ(*s.power_watts, 455.25);
  EXPECT_DOUBLE_EQ(*s.energy_joules, 9876543.21);
  EXPECT_DOUBLE_EQ(*s.pcie_tx_bytes_per_second, 2048 * 1024.0);
  EXPECT_DOUBLE_EQ(*s.pcie_rx_bytes_per_second, 1000 * 1024.0);
  EXPECT_DOUBLE_EQ(*s.nvlink_tx_bytes, 3 * 1024.0);
  EXPECT_DOUBLE_EQ(*s.nvlink_rx_bytes, 1073741824.0);
  ASSERT_TRUE(s.processes.has_value());
  EXPECT_EQ(*s.processes, (std::vector<NvmlProcessUsage>{{100, 2000}, {300, 1000}}));
  for (const auto &name : kNvmlCallNames)
    EXPECT_EQ(errors(snapshot, std::string(name)), 0u) << name;
}

TEST(NvmlSampler, ExposesTheDeviceListForUuidMapping) {
  ScriptedNvml nvml;
  nvml.devices = {h100(), h100()};
  nvml.devices[1].uuid = "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd";
  nvml.devices[1].pci_bus_id = "00000000:2A:00.0";
  nvml.devices[1].minor = 0;
  NvmlSampler sampler(nvml);
  EXPECT_TRUE(sampler.devices().empty()); // nothing before the first sample
  sampler.sample();
  ASSERT_EQ(sampler.devices().size(), 2u);
  EXPECT_EQ(sampler.devices()[1].index, 1u);
  EXPECT_EQ(sampler.devices()[1].uuid, "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd");
  EXPECT_EQ(sampler.devices()[1].minor_number, 0u);
  EXPECT_EQ(sampler.devices()[1].pci_bus_id, "00000000:2A:00.0");
  sampler.sample();
  EXPECT_EQ(nvml.devices[1].asked[NvmlCall::uuid], 1); // identity is read once
}

TEST(NvmlSampler, NotSupportedIsCountedOnceAndNotAskedAgain) {
  ScriptedNvml nvml;
  nvml.devices = {h100(), h100()};
  nvml.devices[1].status_of[NvmlCall::power_usage] = NT_NVML_ERROR_NOT_SUPPORTED;
  NvmlSampler sampler(nvml);
  sampler.sample();
  sampler.sample();
  const auto snapshot = sampler.sample();

  EXPECT_EQ(nvml.devices[1].asked[NvmlCall::power_usage], 1);
  EXPECT_EQ(nvml.devices[0].asked[NvmlCall::power_usage], 3);
  EXPECT_EQ(errors(snapshot, "nvmlDeviceGetPowerUsage"), 1u);
  EXPECT_FALSE(snapshot.devices[1].power_watts.has_value());
  EXPECT_TRUE(snapshot.devices[1].energy_joules.has_value()); // only the failing value is lost
  EXPECT_DOUBLE_EQ(*snapshot.devices[0].power_watts, 455.25);
}

TEST(NvmlSampler, AMissingFunctionIsPermanentToo) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  nvml.devices[0].status_of[NvmlCall::energy] = NT_NVML_ERROR_FUNCTION_NOT_FOUND;
  NvmlSampler sampler(nvml);
  sampler.sample();
  const auto snapshot = sampler.sample();
  EXPECT_EQ(nvml.devices[0].asked[NvmlCall::energy], 1);
  EXPECT_EQ(errors(snapshot, "nvmlDeviceGetTotalEnergyConsumption"), 1u);
  EXPECT_FALSE(snapshot.devices[0].energy_joules.has_value());
}

TEST(NvmlSampler, TransientErrorsAreCountedEachTimeAndValuesReturnWhenTheyClear) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  // A timeout, not GPU_IS_LOST: a lost GPU's other calls are skipped (tested below).
  nvml.devices[0].status_of[NvmlCall::memory_info] = NT_NVML_ERROR_TIMEOUT;
  NvmlSampler sampler(nvml);
  sampler.sample();
  const auto failing = sampler.sample();
  EXPECT_EQ(errors(failing, "nvmlDeviceGetMemoryInfo"), 2u);
  EXPECT_FALSE(failing.devices[0].memory_used_bytes.has_value());
  EXPECT_TRUE(failing.devices[0].temperature_celsius.has_value());

  nvml.devices[0].status_of.erase(NvmlCall::memory_info);
  const auto recovered = sampler.sample();
  EXPECT_EQ(errors(recovered, "nvmlDeviceGetMemoryInfo"), 2u);
  EXPECT_EQ(recovered.devices[0].memory_used_bytes, 1073741824u);
}

TEST(NvmlSampler, UnsupportedNvlinkCostsOneErrorPerDirectionAndKeepsPcie) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  nvml.devices[0].status_of[NvmlCall::field_values] = NT_NVML_ERROR_NOT_SUPPORTED;
  NvmlSampler sampler(nvml);
  const auto snapshot = sampler.sample();
  // Both NVLink directions are unsupported: one error per direction, PCIe untouched.
  EXPECT_EQ(errors(snapshot, "nvmlDeviceGetFieldValues"), 2u);
  EXPECT_FALSE(snapshot.devices[0].nvlink_tx_bytes.has_value());
  EXPECT_FALSE(snapshot.devices[0].nvlink_rx_bytes.has_value());
  EXPECT_TRUE(snapshot.devices[0].pcie_tx_bytes_per_second.has_value());
}

TEST(NvmlSampler, FailedInitIsRetriedEveryThirtyScans) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  nvml.init_results = {NT_NVML_ERROR_DRIVER_NOT_LOADED, NT_NVML_ERROR_DRIVER_NOT_LOADED};
  NvmlSampler sampler(nvml);
  NvmlSnapshot snapshot;
  for (unsigned scan = 1; scan <= NvmlSampler::kInitRetryScans; ++scan) {
    snapshot = sampler.sample();
    EXPECT_TRUE(snapshot.in_use); // the error counter is exported while NVML fails
    EXPECT_TRUE(snapshot.devices.empty());
  }
  EXPECT_EQ(nvml.init_calls, 1);
  EXPECT_EQ(errors(snapshot, "nvmlInit"), 1u);
  snapshot = sampler.sample(); // scan 31: second attempt, fails
  EXPECT_EQ(nvml.init_calls, 2);
  EXPECT_EQ(errors(snapshot, "nvmlInit"), 2u);
  for (unsigned scan = 1; scan < NvmlSampler::kInitRetryScans; ++scan)
    snapshot = sampler.sample();
  EXPECT_TRUE(snapshot.devices.empty());
  snapshot = sampler.sample(); // scan 61: third attempt succeeds
  EXPECT_EQ(nvml.init_calls, 3);
  ASSERT_EQ(snapshot.devices.size(), 1u);
  EXPECT_EQ(errors(snapshot, "nvmlInit"), 2u);
  sampler.sample();
  EXPECT_EQ(nvml.init_calls, 3); // initialised once
}

TEST(NvmlSampler, DeviceCountFailureIsRetriedNextScan) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  nvml.count_status = NT_NVML_ERROR_UNKNOWN;
  NvmlSampler sampler(nvml);
  EXPECT_TRUE(sampler.sample().devices.empty());
  nvml.count_status = NT_NVML_SUCCESS;
  const auto snapshot = sampler.sample();
  EXPECT_EQ(snapshot.devices.size(), 1u);
  EXPECT_EQ(errors(snapshot, "nvmlDeviceGetCount"), 1u);
}

TEST(NvmlSampler, ADeviceThatCannotBeOpenedIsLeftOut) {
  ScriptedNvml nvml;
  nvml.devices = {h100(), h100()};
  nvml.devices[0].open_status = NT_NVML_ERROR_GPU_IS_LOST;
  NvmlSampler sampler(nvml);
  const auto snapshot = sampler.sample();
  ASSERT_EQ(snapshot.devices.size(), 1u);
  EXPECT_EQ(snapshot.devices[0].device.index, 1u);
  EXPECT_EQ(errors(snapshot, "nvmlDeviceGetHandleByIndex"), 1u);
  EXPECT_EQ(sampler.devices().size(), 1u);
}

TEST(NvmlSampler, IdentityFailuresLeaveEmptyFields) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  nvml.devices[0].status_of[NvmlCall::uuid] = NT_NVML_ERROR_UNKNOWN;
  nvml.devices[0].status_of[NvmlCall::minor_number] = NT_NVML_ERROR_NOT_SUPPORTED;
  NvmlSampler sampler(nvml);
  const auto snapshot = sampler.sample();
  ASSERT_EQ(snapshot.devices.size(), 1u);
  EXPECT_EQ(snapshot.devices[0].device.uuid, "");
  EXPECT_EQ(snapshot.devices[0].device.minor_number, std::nullopt);
  EXPECT_EQ(snapshot.devices[0].device.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(errors(snapshot, "nvmlDeviceGetUUID"), 1u);
}

TEST(NvmlSampler, ProcessesWithoutAFigureAreSkippedAndMigDuplicatesSummed) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  // Under MIG the same process is listed once per GPU instance it uses.
  nvml.devices[0].processes = {
      {500, 100}, {600, NT_NVML_VALUE_NOT_AVAILABLE}, {500, 250}, {700, 0}};
  NvmlSampler sampler(nvml);
  const auto snapshot = sampler.sample();
  EXPECT_EQ(*snapshot.devices[0].processes, (std::vector<NvmlProcessUsage>{{500, 350}, {700, 0}}));
}

TEST(NvmlSampler, AFailedProcessListIsUnknownNotEmpty) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  nvml.devices[0].status_of[NvmlCall::compute_processes] = kNvmlUnrecognisedLayout;
  NvmlSampler sampler(nvml);
  const auto snapshot = sampler.sample();
  EXPECT_FALSE(snapshot.devices[0].processes.has_value());
  EXPECT_EQ(errors(snapshot, "nvmlDeviceGetComputeRunningProcesses"), 1u);
}

TEST(NvmlSampler, ALostGpuIsMarkedAndNotAskedAgainInTheSameScan) {
  ScriptedNvml nvml;
  nvml.devices = {h100(), h100()};
  nvml.devices[1].pci_bus_id = "00000000:3B:00.0";
  NvmlSampler sampler(nvml);
  auto snapshot = sampler.sample();
  ASSERT_EQ(snapshot.devices.size(), 2u);
  EXPECT_FALSE(snapshot.devices[1].lost);
  EXPECT_TRUE(snapshot.ready);

  // Every call on GPU 1 now answers GPU_IS_LOST: the first one marks it and the rest of its
  // calls are skipped for this scan, and asked again at the next.
  for (const auto call : {NvmlCall::utilization, NvmlCall::memory_info, NvmlCall::temperature,
                          NvmlCall::ecc_errors, NvmlCall::throttle_reasons})
    nvml.at(1).status_of[call] = NT_NVML_ERROR_GPU_IS_LOST;
  nvml.at(1).asked.clear();
  snapshot = sampler.sample();
  EXPECT_TRUE(snapshot.devices[1].lost);
  EXPECT_FALSE(snapshot.devices[0].lost);
  EXPECT_FALSE(snapshot.devices[1].memory_used_bytes);
  EXPECT_EQ(nvml.at(1).asked[NvmlCall::utilization], 1);
  EXPECT_EQ(nvml.at(1).asked[NvmlCall::memory_info], 0);
  EXPECT_EQ(nvml.at(1).asked[NvmlCall::ecc_errors], 0);
  EXPECT_EQ(errors(snapshot, "nvmlDeviceGetUtilizationRates"), 1);
  sampler.sample();
  EXPECT_EQ(nvml.at(1).asked[NvmlCall::utilization], 2);

  // Back: the flag clears.
  nvml.at(1).status_of.clear();
  EXPECT_FALSE(sampler.sample().devices[1].lost);
}

TEST(NvmlSampler, HealthValuesAndMissingFunctions) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  nvml.at(0).ecc_uncorrected_volatile = 3;
  nvml.at(0).remapped = {5, 1, true, false};
  nvml.at(0).throttle = NT_NVML_THROTTLE_SW_THERMAL_SLOWDOWN | NT_NVML_THROTTLE_SW_POWER_CAP;
  nvml.at(0).status_of[NvmlCall::retired_pages_pending] = NT_NVML_ERROR_FUNCTION_NOT_FOUND;
  NvmlSampler sampler(nvml);
  const auto snapshot = sampler.sample();
  const auto &s = snapshot.devices.at(0);
  ASSERT_EQ(s.ecc_errors.size(), 4u);
  for (const auto &e : s.ecc_errors)
    EXPECT_EQ(e.count, e.type == NvmlEccType::uncorrected ? 3u : 0u);
  ASSERT_TRUE(s.remapped_rows);
  EXPECT_EQ(s.remapped_rows->corrected, 5u);
  EXPECT_TRUE(s.remapped_rows->pending);
  EXPECT_EQ(s.throttle_reasons, 0x24u);
  EXPECT_FALSE(s.retired_pages_pending);
  EXPECT_FALSE(snapshot.functions_available.at("nvmlDeviceGetRetiredPagesPendingStatus"));
  EXPECT_TRUE(snapshot.functions_available.at("nvmlDeviceGetTotalEccErrors"));
  // Permanent: not asked again.
  sampler.sample();
  EXPECT_EQ(nvml.at(0).asked[NvmlCall::retired_pages_pending], 1);
}

constexpr std::uint64_t kSecond = 1'000'000;
constexpr std::uint64_t kT0 = 1'795'804'127'000'000;

// A sampler whose wall clock the test moves.
struct ClockedSampler {
  std::uint64_t now_us = kT0;
  NvmlSampler sampler;
  explicit ClockedSampler(NvmlApi &api)
      : sampler(api,
                NvmlSampler::Settings{std::chrono::milliseconds(2000), [this] { return now_us; }}) {
  }
};

const ProcessId kTraced{100, 5555};

TEST(NvmlSampler, ProcessUtilizationBecomesBusyTimeOfTracedProcesses) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  // 300 is on the GPU but not traced.
  nvml.at(0).utilization_samples = {{100, kT0 - 100'000, 50, 10}, {300, kT0 - 90'000, 100, 100}};
  ClockedSampler clocked(nvml);
  const ProcessGpuTime::Traced traced{{100, kTraced}};
  auto snapshot = clocked.sampler.sample(traced);
  ASSERT_EQ(snapshot.process_gpu_time.size(), 1u);
  EXPECT_EQ(snapshot.process_gpu_time[0].process, kTraced);
  EXPECT_EQ(snapshot.process_gpu_time[0].gpu, 0u);
  EXPECT_DOUBLE_EQ(snapshot.process_gpu_time[0].sm_busy_seconds, 1.0); // 50 % of a 2 s scan
  EXPECT_DOUBLE_EQ(snapshot.process_gpu_time[0].memory_busy_seconds, 0.2);
  EXPECT_EQ(snapshot.process_utilization_up, true);

  // Nothing new (NOT_FOUND): no news, no error; the next query starts at the newest stamp.
  clocked.now_us += 2 * kSecond;
  snapshot = clocked.sampler.sample(traced);
  EXPECT_DOUBLE_EQ(snapshot.process_gpu_time.at(0).sm_busy_seconds, 1.0);
  EXPECT_EQ(snapshot.process_utilization_up, true);
  EXPECT_EQ(nvml.at(0).last_seen_asked, (std::vector<std::uint64_t>{0, kT0 - 90'000}));

  nvml.at(0).utilization_samples.push_back({100, kT0 + 3 * kSecond - 90'000, 25, 0});
  clocked.now_us += 2 * kSecond;
  snapshot = clocked.sampler.sample(traced);
  EXPECT_DOUBLE_EQ(snapshot.process_gpu_time.at(0).sm_busy_seconds, 1.0 + 0.25 * 3);
  EXPECT_EQ(errors(snapshot, "nvmlDeviceGetProcessUtilization"), 0u);

  // The process exited: forgotten.
  snapshot = clocked.sampler.sample({});
  EXPECT_TRUE(snapshot.process_gpu_time.empty());
}

TEST(NvmlSampler, ProcessUtilizationNotSupportedLeavesTheCollectorOutAndIsAskedOnce) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  nvml.at(0).status_of[NvmlCall::process_utilization] = NT_NVML_ERROR_NOT_SUPPORTED; // MIG
  NvmlSampler sampler(nvml);
  NvmlSnapshot snapshot;
  for (int scan = 0; scan < 3; ++scan)
    snapshot = sampler.sample({{100, kTraced}});
  EXPECT_EQ(nvml.at(0).asked[NvmlCall::process_utilization], 1);
  EXPECT_EQ(errors(snapshot, "nvmlDeviceGetProcessUtilization"), 1u);
  EXPECT_EQ(snapshot.process_utilization_up, std::nullopt);
  EXPECT_TRUE(snapshot.process_gpu_time.empty());
}

TEST(NvmlSampler, ProcessUtilizationFailingOnEveryGpuIsACollectorDown) {
  ScriptedNvml nvml;
  nvml.devices = {h100(), h100()};
  nvml.at(0).status_of[NvmlCall::process_utilization] = NT_NVML_ERROR_UNKNOWN;
  nvml.at(1).status_of[NvmlCall::process_utilization] = NT_NVML_ERROR_NOT_SUPPORTED;
  NvmlSampler sampler(nvml);
  sampler.sample();
  auto snapshot = sampler.sample();
  EXPECT_EQ(snapshot.process_utilization_up, false);
  EXPECT_EQ(errors(snapshot, "nvmlDeviceGetProcessUtilization"), 3u); // 2 + 1 NOT_SUPPORTED
  nvml.at(0).status_of.clear();
  snapshot = sampler.sample();
  EXPECT_EQ(snapshot.process_utilization_up, true);
}

TEST(NvmlSampler, ProcessUtilizationIsUnknownUntilNvmlIsReady) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  nvml.init_results = {NT_NVML_ERROR_DRIVER_NOT_LOADED};
  NvmlSampler sampler(nvml);
  EXPECT_EQ(sampler.sample().process_utilization_up, std::nullopt);
  ScriptedNvml no_gpus;
  NvmlSampler empty(no_gpus);
  EXPECT_EQ(empty.sample().process_utilization_up, std::nullopt);
}

TEST(NvmlSampler, AccountingRecordsOfTracedProcessesWhereAccountingIsOn) {
  ScriptedNvml nvml;
  nvml.devices = {h100(), h100()};
  // GPU 0 lists 100 (traced) and 300 (not); 400 is traced and busy but has no record.
  nvml.at(0).processes = {{100, 1000}, {300, 2000}};
  nvml.at(0).utilization_samples = {{400, kT0 - 1000, 10, 10}};
  nvml.at(0).accounting = true;
  NvmlAccountingStats record;
  record.gpu_percent = 63;
  record.memory_percent = 21;
  record.max_memory_bytes = 1u << 30;
  nvml.at(0).accounting_records = {{100, record}, {300, record}};
  nvml.at(1).processes = {{100, 1000}};
  nvml.at(1).accounting_records = {{100, record}}; // accounting off on GPU 1
  ClockedSampler clocked(nvml);
  const ProcessGpuTime::Traced traced{{100, kTraced}, {400, ProcessId{400, 1}}};
  const auto snapshot = clocked.sampler.sample(traced);

  EXPECT_EQ(snapshot.devices[0].accounting_enabled, true);
  EXPECT_EQ(snapshot.devices[1].accounting_enabled, false);
  EXPECT_EQ(nvml.at(0).accounting_asked, (std::vector<std::uint32_t>{100, 400}));
  EXPECT_TRUE(nvml.at(1).accounting_asked.empty());
  ASSERT_EQ(snapshot.process_accounting.size(), 1u);
  EXPECT_EQ(snapshot.process_accounting[0].process, kTraced);
  EXPECT_EQ(snapshot.process_accounting[0].gpu, 0u);
  EXPECT_EQ(snapshot.process_accounting[0].stats, record);
  EXPECT_EQ(errors(snapshot, "nvmlDeviceGetAccountingStats"), 0u); // NOT_FOUND is no error
}

TEST(NvmlSampler, AccountingModeNotSupportedIsAskedOnce) {
  ScriptedNvml nvml;
  nvml.devices = {h100()};
  nvml.at(0).status_of[NvmlCall::accounting_mode] = NT_NVML_ERROR_NOT_SUPPORTED;
  NvmlSampler sampler(nvml);
  sampler.sample({{100, kTraced}});
  const auto snapshot = sampler.sample({{100, kTraced}});
  EXPECT_EQ(nvml.at(0).asked[NvmlCall::accounting_mode], 1);
  EXPECT_EQ(snapshot.devices[0].accounting_enabled, std::nullopt);
  EXPECT_TRUE(nvml.at(0).accounting_asked.empty());
}

} // namespace
} // namespace neutracer
