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

} // namespace
} // namespace neutracer
