// SPDX-License-Identifier: Apache-2.0
#pragma once
// What one NVML sample found, in base units: the input of the NVML metric families.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/process_id.h"
#include "nvml/nvml_api.h"

namespace neutracer {

// A GPU as NVML numbers it; fixed while the daemon runs. The index orders devices by PCI bus
// id, as nvidia-smi does; CUDA ordinals of a process map to it through the UUID.
struct NvmlDevice {
  unsigned index = 0;
  std::string uuid;                     // "GPU-8c1e…"; empty when NVML could not tell
  std::string name;                     // "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id;               // NVML's form: "00000000:17:00.0"
  std::optional<unsigned> minor_number; // N of /dev/nvidiaN
  bool operator==(const NvmlDevice &) const = default;
};

struct NvmlProcessUsage {
  std::uint32_t pid = 0;
  std::uint64_t used_bytes = 0;
  bool operator==(const NvmlProcessUsage &) const = default;
};

// One device's readings; a value NVML could not give is nullopt and its series is left out.
struct NvmlDeviceSample {
  NvmlDevice device;
  std::optional<double> gpu_utilization_ratio;
  std::optional<double> memory_bandwidth_utilization_ratio;
  std::optional<std::uint64_t> memory_used_bytes;
  std::optional<std::uint64_t> memory_total_bytes;
  std::optional<double> temperature_celsius;
  std::optional<double> power_watts;
  std::optional<double> energy_joules;
  std::optional<double> pcie_tx_bytes_per_second;
  std::optional<double> pcie_rx_bytes_per_second;
  std::optional<double> nvlink_tx_bytes;
  std::optional<double> nvlink_rx_bytes;
  std::optional<std::vector<NvmlProcessUsage>> processes; // compute processes, as NVML sees them

  // Health. ECC counts only for the (type, counter) pairs NVML gave.
  struct EccCount {
    NvmlEccType type = NvmlEccType::corrected;
    NvmlEccCounter counter = NvmlEccCounter::volatile_count;
    std::uint64_t count = 0;
    bool operator==(const EccCount &) const = default;
  };
  std::vector<EccCount> ecc_errors;
  std::optional<NvmlRemappedRows> remapped_rows;
  std::optional<bool> retired_pages_pending;
  std::optional<std::uint64_t> throttle_reasons; // NT_NVML_THROTTLE_* mask
  // Per-process accounting (nvidia-smi -am 1): nullopt when NVML could not tell.
  std::optional<bool> accounting_enabled;
  // A call on this GPU answered NVML_ERROR_GPU_IS_LOST in this scan: it fell off the bus or
  // stopped answering; its other values are left out.
  bool lost = false;
};

// A traced process's busy time on one GPU since its first utilization sample there.
struct NvmlProcessGpuTime {
  ProcessId process;
  unsigned gpu = 0;
  double sm_busy_seconds = 0;
  double memory_busy_seconds = 0;
  bool operator==(const NvmlProcessGpuTime &) const = default;
};

// A traced process's accounting record on a GPU with accounting mode on.
struct NvmlProcessAccounting {
  ProcessId process;
  unsigned gpu = 0;
  NvmlAccountingStats stats;
  bool operator==(const NvmlProcessAccounting &) const = default;
};

struct NvmlSnapshot {
  bool in_use = false; // false: NVML disabled or not installed; no NVML series at all
  bool ready = false;  // NVML initialised and listed its GPUs
  std::string driver_version;
  std::vector<NvmlDeviceSample> devices;
  std::map<std::string, std::uint64_t> errors_by_call; // every call the daemon makes, 0 included
  // GPUs that answered GPU_IS_LOST when the daemon listed them: never opened, no other values.
  std::vector<unsigned> lost_unopened;
  // Every call the daemon makes: false once the library answered that it has no such function
  // (an older driver); empty until NVML initialised.
  std::map<std::string, bool> functions_available;

  std::vector<NvmlProcessGpuTime> process_gpu_time;
  std::vector<NvmlProcessAccounting> process_accounting;
  // Whether per-process utilization works: true when a GPU answered this scan, false when
  // every GPU that supports it failed; nullopt while NVML is not ready, without GPUs, or when
  // no GPU supports it (MIG, GPUs before Maxwell, a library without the function).
  std::optional<bool> process_utilization_up;
};

} // namespace neutracer
