#pragma once
// What one NVML sample found, in base units: the input of the NVML metric families.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
};

struct NvmlSnapshot {
  bool in_use = false; // false: NVML disabled or not installed; no NVML series at all
  std::string driver_version;
  std::vector<NvmlDeviceSample> devices;
  std::map<std::string, std::uint64_t> errors_by_call; // every call the daemon makes, 0 included
};

} // namespace neutracer
