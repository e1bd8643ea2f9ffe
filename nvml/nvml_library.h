// SPDX-License-Identifier: Apache-2.0
#pragma once
// NvmlApi over the real NVML (libnvidia-ml.so.1), loaded at run time with dlopen so that the
// daemon builds and runs without it. Thin: each query is one NVML call; functions an older
// driver lacks answer NVML_ERROR_FUNCTION_NOT_FOUND.
#include <memory>
#include <string>
#include <vector>

#include "nvml/nvml_api.h"

namespace neutracer {

class NvmlLibrary final : public NvmlApi {
public:
  struct Loaded {
    std::unique_ptr<NvmlLibrary> library; // null when dlopen failed
    std::string error;                    // dlerror()'s reason then
  };
  static Loaded load(const std::string &path);

private:
  struct DlClose {
    void operator()(void *handle) const;
  };
  using DlHandle = std::unique_ptr<void, DlClose>;
  struct ConstructionKey {}; // only load() constructs

public:
  NvmlLibrary(ConstructionKey, DlHandle handle);

  NvmlLibrary(const NvmlLibrary &) = delete;
  NvmlLibrary &operator=(const NvmlLibrary &) = delete;
  ~NvmlLibrary() override; // nvmlShutdown for each successful init, then dlclose

  // The file dlopen found, and the versioned symbols resolved or missing, for logs.
  std::string file() const;
  std::string symbol_report() const;

  int init() override;
  NvmlResult<std::string> driver_version() override;
  NvmlResult<unsigned> device_count() override;
  int open_device(unsigned index) override;
  NvmlResult<std::string> uuid(unsigned index) override;
  NvmlResult<std::string> name(unsigned index) override;
  NvmlResult<std::string> pci_bus_id(unsigned index) override;
  NvmlResult<unsigned> minor_number(unsigned index) override;
  NvmlResult<NvmlMemory> memory(unsigned index) override;
  NvmlResult<NvmlUtilization> utilization(unsigned index) override;
  NvmlResult<unsigned> temperature_celsius(unsigned index) override;
  NvmlResult<unsigned> power_milliwatts(unsigned index) override;
  NvmlResult<std::uint64_t> energy_millijoules(unsigned index) override;
  NvmlResult<unsigned> pcie_kib_per_second(unsigned index, NvmlDirection direction) override;
  NvmlResult<std::uint64_t> nvlink_data_kib(unsigned index, NvmlDirection direction) override;
  NvmlResult<std::vector<NvmlProcessMemory>> compute_processes(unsigned index) override;
  NvmlResult<std::uint64_t> ecc_errors(unsigned index, NvmlEccType type,
                                       NvmlEccCounter counter) override;
  NvmlResult<NvmlRemappedRows> remapped_rows(unsigned index) override;
  NvmlResult<bool> retired_pages_pending(unsigned index) override;
  NvmlResult<std::uint64_t> throttle_reasons(unsigned index) override;
  NvmlResult<std::vector<NvmlProcessUtilization>>
  process_utilization(unsigned index, std::uint64_t last_seen_us) override;
  NvmlResult<bool> accounting_mode(unsigned index) override;
  NvmlResult<NvmlAccountingStats> accounting_stats(unsigned index, std::uint32_t pid) override;

private:
  struct Symbols {
    nt_nvml_init_fn init = nullptr;
    nt_nvml_shutdown_fn shutdown = nullptr;
    nt_nvml_driver_version_fn driver_version = nullptr;
    nt_nvml_device_count_fn device_count = nullptr;
    nt_nvml_handle_by_index_fn handle_by_index = nullptr;
    nt_nvml_device_string_fn uuid = nullptr;
    nt_nvml_device_string_fn name = nullptr;
    nt_nvml_pci_info_fn pci_info = nullptr;
    nt_nvml_device_uint_fn minor_number = nullptr;
    nt_nvml_memory_fn memory = nullptr;
    nt_nvml_utilization_fn utilization = nullptr;
    nt_nvml_temperature_fn temperature = nullptr;
    nt_nvml_device_uint_fn power_usage = nullptr;
    nt_nvml_energy_fn energy = nullptr;
    nt_nvml_pcie_throughput_fn pcie_throughput = nullptr;
    nt_nvml_field_values_fn field_values = nullptr;
    nt_nvml_running_processes_fn compute_processes = nullptr;
    nt_nvml_total_ecc_errors_fn ecc_errors = nullptr;
    nt_nvml_remapped_rows_fn remapped_rows = nullptr;
    nt_nvml_retired_pages_pending_fn retired_pages_pending = nullptr;
    nt_nvml_throttle_reasons_fn throttle_reasons = nullptr;
    nt_nvml_process_utilization_fn process_utilization = nullptr;
    nt_nvml_accounting_mode_fn accounting_mode = nullptr;
    nt_nvml_accounting_stats_fn accounting_stats = nullptr;
  };

  // The handle of an opened device, or nullptr.
  nt_nvml_device device(unsigned index) const;
  // Calls `query(symbol, handle)` when the library has `symbol` and device `index` is open.
  template <typename T, typename Symbol, typename Query>
  NvmlResult<T> with_device(Symbol symbol, unsigned index, Query query) const {
    if (symbol == nullptr)
      return NvmlResult<T>{NT_NVML_ERROR_FUNCTION_NOT_FOUND, T{}};
    const nt_nvml_device handle = device(index);
    if (handle == nullptr)
      return NvmlResult<T>{NT_NVML_ERROR_INVALID_ARGUMENT, T{}};
    return query(symbol, handle);
  }
  // The many queries that fill one value: `symbol(handle, args..., &raw)`, its value `raw` as a
  // T, as NVML left it whatever the status (callers look at the status first).
  template <typename T, typename Raw, typename Symbol, typename... Args>
  NvmlResult<T> device_value(Symbol symbol, unsigned index, Args... args) const {
    return with_device<T>(symbol, index, [args...](auto query, nt_nvml_device handle) {
      Raw raw{};
      const int status = query(handle, args..., &raw);
      return NvmlResult<T>{status, static_cast<T>(raw)};
    });
  }

  DlHandle handle_;
  Symbols symbols_;
  std::vector<std::string> resolved_; // symbol names found, in lookup order
  std::vector<std::string> missing_;  // functions with no symbol in this library
  unsigned successful_inits_ = 0;
  std::vector<nt_nvml_device> devices_; // by index; nullptr until opened
  unsigned process_capacity_ = 32;      // entries to offer next time; grows with use
};

// NVML for the daemon, or nullptr when `library` cannot be loaded: one info line when it is
// not installed (normal on hosts without NVIDIA's driver), a warning when an existing file
// named by path fails to load.
std::unique_ptr<NvmlApi> open_nvml(const std::string &library);

} // namespace neutracer
