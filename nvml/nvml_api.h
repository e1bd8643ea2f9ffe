// SPDX-License-Identifier: Apache-2.0
#pragma once
// The NVML queries the sampler makes, as a small interface: NvmlLibrary implements it over
// libnvidia-ml.so.1; unit tests implement it with a fake. Devices are addressed by NVML index.
// Every answer carries NVML's return code, so the sampler decides what a failure costs.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nvml/nvml_abi.h"

namespace neutracer {

// A code of our own, outside NVML's range: the running-process entries matched none of the
// layouts drivers are known to write.
inline constexpr int kNvmlUnrecognisedLayout = -1;

template <typename T> struct NvmlResult {
  int status = NT_NVML_SUCCESS;
  T value{};
  bool ok() const { return status == NT_NVML_SUCCESS; }
};

struct NvmlMemory {
  std::uint64_t total_bytes = 0;
  std::uint64_t used_bytes = 0;
};

struct NvmlUtilization {
  unsigned gpu_percent = 0;
  unsigned memory_percent = 0;
};

struct NvmlProcessMemory {
  std::uint32_t pid = 0;
  std::uint64_t used_bytes = NT_NVML_VALUE_NOT_AVAILABLE; // NVML cannot always tell
  bool operator==(const NvmlProcessMemory &) const = default;
};

// One process's share of a GPU since the lastSeenTimeStamp the query passed (NVML averages its
// driver samples over that period), stamped with the newest of them.
struct NvmlProcessUtilization {
  std::uint32_t pid = 0;
  std::uint64_t timestamp_us = 0; // wall clock, microseconds
  unsigned sm_percent = 0;        // SMs busy with the process's kernels
  unsigned memory_percent = 0;    // memory controller busy with its reads and writes
  bool operator==(const NvmlProcessUtilization &) const = default;
};

// nvmlAccountingStats_t of a process (accounting mode on): over its life so far.
struct NvmlAccountingStats {
  std::optional<unsigned> gpu_percent;    // nullopt: NVML_VALUE_NOT_AVAILABLE
  std::optional<unsigned> memory_percent; // likewise
  std::optional<std::uint64_t> max_memory_bytes;
  bool running = true;
  bool operator==(const NvmlAccountingStats &) const = default;
};

enum class NvmlDirection { tx, rx }; // tx: sent by the GPU; rx: received by it

enum class NvmlEccType { corrected, uncorrected };
enum class NvmlEccCounter { volatile_count, aggregate }; // since driver load; over the GPU's life

struct NvmlRemappedRows {
  unsigned corrected = 0;   // rows remapped after correctable errors
  unsigned uncorrected = 0; // rows remapped after uncorrectable errors
  bool pending = false;     // a remapping waits for the next GPU reset
  bool failed = false;      // a remapping failed: the GPU needs service
};

// The NVML functions the daemon calls, named without their version suffix: the label of
// neutracer_nvml_errors_total{call}.
enum class NvmlCall {
  init,
  driver_version,
  device_count,
  device_handle,
  uuid,
  name,
  pci_info,
  minor_number,
  memory_info,
  utilization,
  temperature,
  power_usage,
  energy,
  pcie_throughput,
  field_values,
  compute_processes,
  ecc_errors,
  remapped_rows,
  retired_pages_pending,
  throttle_reasons,
  process_utilization,
  accounting_mode,
  accounting_stats,
};
inline constexpr std::array<std::string_view, 23> kNvmlCallNames = {
    "nvmlInit",
    "nvmlSystemGetDriverVersion",
    "nvmlDeviceGetCount",
    "nvmlDeviceGetHandleByIndex",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetName",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetMinorNumber",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetPcieThroughput",
    "nvmlDeviceGetFieldValues",
    "nvmlDeviceGetComputeRunningProcesses",
    "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetRetiredPagesPendingStatus",
    // Also resolved as nvmlDeviceGetCurrentClocksEventReasons (its name since R535).
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetProcessUtilization",
    "nvmlDeviceGetAccountingMode",
    "nvmlDeviceGetAccountingStats",
};
inline std::string_view nvml_call_name(NvmlCall call) {
  return kNvmlCallNames[static_cast<std::size_t>(call)];
}

class NvmlApi {
public:
  virtual ~NvmlApi() = default;

  // nvmlInit_v2. The implementation shuts NVML down when destroyed if this succeeded.
  virtual int init() = 0;
  virtual NvmlResult<std::string> driver_version() = 0;
  virtual NvmlResult<unsigned> device_count() = 0;
  // Looks up device `index` (nvmlDeviceGetHandleByIndex); the device queries below need it.
  virtual int open_device(unsigned index) = 0;

  virtual NvmlResult<std::string> uuid(unsigned index) = 0;
  virtual NvmlResult<std::string> name(unsigned index) = 0;
  virtual NvmlResult<std::string> pci_bus_id(unsigned index) = 0;
  virtual NvmlResult<unsigned> minor_number(unsigned index) = 0;
  virtual NvmlResult<NvmlMemory> memory(unsigned index) = 0;
  virtual NvmlResult<NvmlUtilization> utilization(unsigned index) = 0;
  virtual NvmlResult<unsigned> temperature_celsius(unsigned index) = 0;
  virtual NvmlResult<unsigned> power_milliwatts(unsigned index) = 0;
  virtual NvmlResult<std::uint64_t> energy_millijoules(unsigned index) = 0;
  // PCIe payload over NVML's 20 ms measurement window, in KiB/s.
  virtual NvmlResult<unsigned> pcie_kib_per_second(unsigned index, NvmlDirection direction) = 0;
  // NVLink payload since the driver loaded, summed over links, in KiB.
  virtual NvmlResult<std::uint64_t> nvlink_data_kib(unsigned index, NvmlDirection direction) = 0;
  virtual NvmlResult<std::vector<NvmlProcessMemory>> compute_processes(unsigned index) = 0;

  // GPU health. Each may answer NT_NVML_ERROR_FUNCTION_NOT_FOUND (an older driver's library),
  // NOT_SUPPORTED (a GPU without ECC, or of another generation) or GPU_IS_LOST.
  virtual NvmlResult<std::uint64_t> ecc_errors(unsigned index, NvmlEccType type,
                                               NvmlEccCounter counter) = 0;
  virtual NvmlResult<NvmlRemappedRows> remapped_rows(unsigned index) = 0;
  virtual NvmlResult<bool> retired_pages_pending(unsigned index) = 0;
  // The mask of NT_NVML_THROTTLE_* reasons that hold the clocks down now.
  virtual NvmlResult<std::uint64_t> throttle_reasons(unsigned index) = 0;

  // Per process. One entry per process busy since `last_seen_us` (0: over the driver's whole
  // sample buffer); NT_NVML_ERROR_NOT_FOUND when none was. NOT_SUPPORTED under MIG and on GPUs
  // before Maxwell.
  virtual NvmlResult<std::vector<NvmlProcessUtilization>>
  process_utilization(unsigned index, std::uint64_t last_seen_us) = 0;
  // Whether the administrator turned per-process accounting on (nvidia-smi -am 1).
  virtual NvmlResult<bool> accounting_mode(unsigned index) = 0;
  // NT_NVML_ERROR_NOT_FOUND for a process the GPU has no record of.
  virtual NvmlResult<NvmlAccountingStats> accounting_stats(unsigned index, std::uint32_t pid) = 0;
};

} // namespace neutracer
