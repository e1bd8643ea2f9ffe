// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_library.h"

#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <initializer_list>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "nvml/nvml_process_layout.h"

namespace neutracer {
namespace {

constexpr unsigned kMaxProcessCapacity = 65536;
constexpr int kProcessListAttempts = 4; // the list may grow between asking and reading
// The driver sizes its per-process sample buffer itself (72 entries on an H100 with R580);
// more than this is not a buffer any driver keeps.
constexpr unsigned kMaxUtilizationSamples = 4096;

template <typename T> NvmlResult<T> failed(int status) { return NvmlResult<T>{status, T{}}; }

// NVML writes a NUL-terminated string into `buffer`; a missing NUL is cut at the buffer's end.
std::string bounded_string(const char *buffer, std::size_t capacity) {
  return std::string(buffer, strnlen(buffer, capacity));
}

// A field value as an unsigned count; negative or non-numeric types are refused.
NvmlResult<std::uint64_t> field_as_count(const nt_nvml_field_value &field) {
  switch (field.value_type) {
  case NT_NVML_VALUE_UNSIGNED_LONG_LONG:
    return {NT_NVML_SUCCESS, field.value.as_ull};
  case NT_NVML_VALUE_UNSIGNED_LONG:
    return {NT_NVML_SUCCESS, field.value.as_ulong};
  case NT_NVML_VALUE_UNSIGNED_INT:
    return {NT_NVML_SUCCESS, field.value.as_uint};
  case NT_NVML_VALUE_SIGNED_LONG_LONG:
    if (field.value.as_sll >= 0)
      return {NT_NVML_SUCCESS, static_cast<std::uint64_t>(field.value.as_sll)};
    break;
  default:
    break;
  }
  return failed<std::uint64_t>(NT_NVML_ERROR_UNKNOWN);
}

} // namespace

void NvmlLibrary::DlClose::operator()(void *handle) const { dlclose(handle); }

NvmlLibrary::Loaded NvmlLibrary::load(const std::string &path) {
  dlerror();
  DlHandle handle(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!handle) {
    const char *why = dlerror();
    return {nullptr, why != nullptr ? why : "dlopen failed"};
  }
  return {std::make_unique<NvmlLibrary>(ConstructionKey{}, std::move(handle)), ""};
}

NvmlLibrary::NvmlLibrary(ConstructionKey, DlHandle handle) : handle_(std::move(handle)) {
  // Newer symbol versions first: the unversioned ones are older ABIs.
  const auto resolve = [this](auto &slot, std::initializer_list<const char *> names) {
    for (const char *name : names)
      if (void *address = dlsym(handle_.get(), name)) {
        slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(address);
        resolved_.emplace_back(name);
        return;
      }
    missing_.emplace_back(*names.begin());
  };
  auto &s = symbols_;
  resolve(s.init, {"nvmlInit_v2"});
  resolve(s.shutdown, {"nvmlShutdown"});
  resolve(s.driver_version, {"nvmlSystemGetDriverVersion"});
  resolve(s.device_count, {"nvmlDeviceGetCount_v2"});
  resolve(s.handle_by_index, {"nvmlDeviceGetHandleByIndex_v2"});
  resolve(s.uuid, {"nvmlDeviceGetUUID"});
  resolve(s.name, {"nvmlDeviceGetName"});
  resolve(s.pci_info, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"});
  resolve(s.minor_number, {"nvmlDeviceGetMinorNumber"});
  resolve(s.memory, {"nvmlDeviceGetMemoryInfo"});
  resolve(s.utilization, {"nvmlDeviceGetUtilizationRates"});
  resolve(s.temperature, {"nvmlDeviceGetTemperature"});
  resolve(s.power_usage, {"nvmlDeviceGetPowerUsage"});
  resolve(s.energy, {"nvmlDeviceGetTotalEnergyConsumption"});
  resolve(s.pcie_throughput, {"nvmlDeviceGetPcieThroughput"});
  resolve(s.field_values, {"nvmlDeviceGetFieldValues"});
  resolve(s.compute_processes,
          {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
  resolve(s.ecc_errors, {"nvmlDeviceGetTotalEccErrors"});
  resolve(s.remapped_rows, {"nvmlDeviceGetRemappedRows"});
  resolve(s.retired_pages_pending, {"nvmlDeviceGetRetiredPagesPendingStatus"});
  // The same function and mask under its R535 name and its older one.
  resolve(s.throttle_reasons,
          {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"});
  resolve(s.process_utilization, {"nvmlDeviceGetProcessUtilization"});
  resolve(s.accounting_mode, {"nvmlDeviceGetAccountingMode"});
  resolve(s.accounting_stats, {"nvmlDeviceGetAccountingStats"});
}

NvmlLibrary::~NvmlLibrary() {
  if (symbols_.shutdown != nullptr)
    for (; successful_inits_ > 0; --successful_inits_)
      symbols_.shutdown();
}

std::string NvmlLibrary::file() const {
  Dl_info info{};
  if (symbols_.init != nullptr &&
      dladdr(reinterpret_cast<const void *>(symbols_.init), &info) != 0 &&
      info.dli_fname != nullptr)
    return info.dli_fname;
  return "(path unknown)";
}

std::string NvmlLibrary::symbol_report() const {
  std::string report = "resolved:";
  for (const auto &name : resolved_)
    report += " " + name;
  report += "; missing:";
  for (const auto &name : missing_)
    report += " " + name;
  if (missing_.empty())
    report += " none";
  return report;
}

nt_nvml_device NvmlLibrary::device(unsigned index) const {
  return index < devices_.size() ? devices_[index] : nullptr;
}

int NvmlLibrary::init() {
  if (symbols_.init == nullptr)
    return NT_NVML_ERROR_FUNCTION_NOT_FOUND;
  const int status = symbols_.init();
  if (status == NT_NVML_SUCCESS)
    ++successful_inits_;
  return status;
}

NvmlResult<std::string> NvmlLibrary::driver_version() {
  if (symbols_.driver_version == nullptr)
    return failed<std::string>(NT_NVML_ERROR_FUNCTION_NOT_FOUND);
  char buffer[NT_NVML_DRIVER_VERSION_BUFFER_BYTES] = {};
  const int status = symbols_.driver_version(buffer, sizeof buffer);
  return {status, status == NT_NVML_SUCCESS ? bounded_string(buffer, sizeof buffer) : ""};
}

NvmlResult<unsigned> NvmlLibrary::device_count() {
  if (symbols_.device_count == nullptr)
    return failed<unsigned>(NT_NVML_ERROR_FUNCTION_NOT_FOUND);
  unsigned count = 0;
  const int status = symbols_.device_count(&count);
  return {status, count};
}

int NvmlLibrary::open_device(unsigned index) {
  if (symbols_.handle_by_index == nullptr)
    return NT_NVML_ERROR_FUNCTION_NOT_FOUND;
  nt_nvml_device handle = nullptr;
  const int status = symbols_.handle_by_index(index, &handle);
  if (status != NT_NVML_SUCCESS)
    return status;
  if (devices_.size() <= index)
    devices_.resize(index + 1, nullptr);
  devices_[index] = handle;
  return NT_NVML_SUCCESS;
}

NvmlResult<std::string> NvmlLibrary::uuid(unsigned index) {
  return with_device<std::string>(symbols_.uuid, index, [](auto uuid, nt_nvml_device handle) {
    char buffer[NT_NVML_UUID_BUFFER_BYTES] = {};
    const int status = uuid(handle, buffer, sizeof buffer);
    return NvmlResult<std::string>{status, bounded_string(buffer, sizeof buffer)};
  });
}

NvmlResult<std::string> NvmlLibrary::name(unsigned index) {
  return with_device<std::string>(symbols_.name, index, [](auto name, nt_nvml_device handle) {
    char buffer[NT_NVML_NAME_BUFFER_BYTES] = {};
    const int status = name(handle, buffer, sizeof buffer);
    return NvmlResult<std::string>{status, bounded_string(buffer, sizeof buffer)};
  });
}

NvmlResult<std::string> NvmlLibrary::pci_bus_id(unsigned index) {
  return with_device<std::string>(
      symbols_.pci_info, index, [](auto pci_info, nt_nvml_device handle) {
        nt_nvml_pci_info pci{};
        const int status = pci_info(handle, &pci);
        return NvmlResult<std::string>{status, bounded_string(pci.bus_id, sizeof pci.bus_id)};
      });
}

NvmlResult<unsigned> NvmlLibrary::minor_number(unsigned index) {
  return device_value<unsigned, unsigned>(symbols_.minor_number, index);
}

NvmlResult<NvmlMemory> NvmlLibrary::memory(unsigned index) {
  return with_device<NvmlMemory>(symbols_.memory, index, [](auto memory, nt_nvml_device handle) {
    nt_nvml_memory info{};
    const int status = memory(handle, &info);
    return NvmlResult<NvmlMemory>{status, NvmlMemory{info.total, info.used}};
  });
}

NvmlResult<NvmlUtilization> NvmlLibrary::utilization(unsigned index) {
  return with_device<NvmlUtilization>(
      symbols_.utilization, index, [](auto utilization, nt_nvml_device handle) {
        nt_nvml_utilization rates{};
        const int status = utilization(handle, &rates);
        return NvmlResult<NvmlUtilization>{status, NvmlUtilization{rates.gpu, rates.memory}};
      });
}

NvmlResult<unsigned> NvmlLibrary::temperature_celsius(unsigned index) {
  return device_value<unsigned, unsigned>(symbols_.temperature, index, NT_NVML_TEMPERATURE_GPU);
}

NvmlResult<unsigned> NvmlLibrary::power_milliwatts(unsigned index) {
  return device_value<unsigned, unsigned>(symbols_.power_usage, index);
}

NvmlResult<std::uint64_t> NvmlLibrary::energy_millijoules(unsigned index) {
  return device_value<std::uint64_t, unsigned long long>(symbols_.energy, index);
}

NvmlResult<unsigned> NvmlLibrary::pcie_kib_per_second(unsigned index, NvmlDirection direction) {
  const int counter =
      direction == NvmlDirection::tx ? NT_NVML_PCIE_TX_BYTES : NT_NVML_PCIE_RX_BYTES;
  return device_value<unsigned, unsigned>(symbols_.pcie_throughput, index, counter);
}

NvmlResult<std::uint64_t> NvmlLibrary::nvlink_data_kib(unsigned index, NvmlDirection direction) {
  const unsigned field_id = direction == NvmlDirection::tx ? NT_NVML_FIELD_NVLINK_DATA_TX_KIB
                                                           : NT_NVML_FIELD_NVLINK_DATA_RX_KIB;
  return with_device<std::uint64_t>(
      symbols_.field_values, index, [field_id](auto field_values, nt_nvml_device handle) {
        nt_nvml_field_value field{};
        field.field_id = field_id;
        field.scope_id = NT_NVML_SCOPE_ALL_LINKS;
        if (const int status = field_values(handle, 1, &field); status != NT_NVML_SUCCESS)
          return failed<std::uint64_t>(status);
        if (field.status != NT_NVML_SUCCESS)
          return failed<std::uint64_t>(field.status);
        return field_as_count(field);
      });
}

NvmlResult<std::vector<NvmlProcessMemory>> NvmlLibrary::compute_processes(unsigned index) {
  using Processes = std::vector<NvmlProcessMemory>;
  return with_device<Processes>(
      symbols_.compute_processes, index, [this](auto compute_processes, nt_nvml_device handle) {
        for (int attempt = 0; attempt < kProcessListAttempts; ++attempt) {
          // Sized for the widest layout and pre-filled, so the decoder can tell the stride.
          std::vector<std::byte> buffer(nvml_process_buffer_bytes(process_capacity_),
                                        kNvmlUnwrittenByte);
          unsigned count = process_capacity_;
          const int status = compute_processes(handle, &count, buffer.data());
          if (status == NT_NVML_ERROR_INSUFFICIENT_SIZE) {
            process_capacity_ =
                std::min(kMaxProcessCapacity, std::max(count + 8, process_capacity_ * 2));
            continue;
          }
          if (status != NT_NVML_SUCCESS)
            return failed<Processes>(status);
          if (count > process_capacity_)
            return failed<Processes>(kNvmlUnrecognisedLayout);
          auto processes = decode_nvml_processes(buffer, count);
          if (!processes)
            return failed<Processes>(kNvmlUnrecognisedLayout);
          return NvmlResult<Processes>{NT_NVML_SUCCESS, std::move(*processes)};
        }
        return failed<Processes>(NT_NVML_ERROR_INSUFFICIENT_SIZE);
      });
}

NvmlResult<std::uint64_t> NvmlLibrary::ecc_errors(unsigned index, NvmlEccType type,
                                                  NvmlEccCounter counter) {
  const int error_type = type == NvmlEccType::corrected ? NT_NVML_MEMORY_ERROR_CORRECTED
                                                        : NT_NVML_MEMORY_ERROR_UNCORRECTED;
  const int counter_type =
      counter == NvmlEccCounter::volatile_count ? NT_NVML_VOLATILE_ECC : NT_NVML_AGGREGATE_ECC;
  return device_value<std::uint64_t, unsigned long long>(symbols_.ecc_errors, index, error_type,
                                                         counter_type);
}

NvmlResult<NvmlRemappedRows> NvmlLibrary::remapped_rows(unsigned index) {
  return with_device<NvmlRemappedRows>(
      symbols_.remapped_rows, index, [](auto remapped_rows, nt_nvml_device handle) {
        unsigned corrected = 0, uncorrected = 0, pending = 0, failed = 0;
        const int status = remapped_rows(handle, &corrected, &uncorrected, &pending, &failed);
        return NvmlResult<NvmlRemappedRows>{
            status, NvmlRemappedRows{corrected, uncorrected, pending != 0, failed != 0}};
      });
}

NvmlResult<bool> NvmlLibrary::retired_pages_pending(unsigned index) {
  return device_value<bool, int>(symbols_.retired_pages_pending, index);
}

NvmlResult<std::uint64_t> NvmlLibrary::throttle_reasons(unsigned index) {
  return device_value<std::uint64_t, unsigned long long>(symbols_.throttle_reasons, index);
}

NvmlResult<std::vector<NvmlProcessUtilization>>
NvmlLibrary::process_utilization(unsigned index, std::uint64_t last_seen_us) {
  using Samples = std::vector<NvmlProcessUtilization>;
  return with_device<Samples>(
      symbols_.process_utilization, index,
      [last_seen_us](auto process_utilization, nt_nvml_device handle) {
        // Asked with no buffer, NVML says how many entries to allocate.
        unsigned count = 0;
        int status = process_utilization(handle, nullptr, &count, last_seen_us);
        if (status == NT_NVML_SUCCESS)
          return NvmlResult<Samples>{NT_NVML_SUCCESS, {}};
        for (int attempt = 0; attempt < kProcessListAttempts; ++attempt) {
          if (status != NT_NVML_ERROR_INSUFFICIENT_SIZE)
            return failed<Samples>(status);
          const unsigned capacity = std::min(std::max(count, 1u), kMaxUtilizationSamples);
          std::vector<nt_nvml_process_utilization> buffer(capacity);
          count = capacity;
          status = process_utilization(handle, buffer.data(), &count, last_seen_us);
          if (status == NT_NVML_ERROR_INSUFFICIENT_SIZE) {
            if (capacity == kMaxUtilizationSamples)
              break;
            count = std::max(count, capacity + 8);
            continue;
          }
          if (status != NT_NVML_SUCCESS)
            return failed<Samples>(status);
          Samples samples;
          samples.reserve(std::min(count, capacity));
          for (unsigned i = 0; i < std::min(count, capacity); ++i)
            samples.push_back({buffer[i].pid, buffer[i].timestamp_us, buffer[i].sm_percent,
                               buffer[i].memory_percent});
          return NvmlResult<Samples>{NT_NVML_SUCCESS, std::move(samples)};
        }
        return failed<Samples>(NT_NVML_ERROR_INSUFFICIENT_SIZE);
      });
}

NvmlResult<bool> NvmlLibrary::accounting_mode(unsigned index) {
  return with_device<bool>(symbols_.accounting_mode, index,
                           [](auto accounting_mode, nt_nvml_device handle) {
                             int mode = NT_NVML_FEATURE_DISABLED;
                             const int status = accounting_mode(handle, &mode);
                             return NvmlResult<bool>{status, mode == NT_NVML_FEATURE_ENABLED};
                           });
}

NvmlResult<NvmlAccountingStats> NvmlLibrary::accounting_stats(unsigned index, std::uint32_t pid) {
  return with_device<NvmlAccountingStats>(
      symbols_.accounting_stats, index, [pid](auto accounting_stats, nt_nvml_device handle) {
        nt_nvml_accounting_stats raw{};
        const int status = accounting_stats(handle, pid, &raw);
        if (status != NT_NVML_SUCCESS)
          return failed<NvmlAccountingStats>(status);
        const auto percent = [](unsigned value) {
          return value == NT_NVML_UINT_NOT_AVAILABLE ? std::nullopt : std::optional(value);
        };
        NvmlAccountingStats stats;
        stats.gpu_percent = percent(raw.gpu_utilization);
        stats.memory_percent = percent(raw.memory_utilization);
        if (raw.max_memory_usage != NT_NVML_VALUE_NOT_AVAILABLE)
          stats.max_memory_bytes = raw.max_memory_usage;
        stats.running = raw.is_running != 0;
        return NvmlResult<NvmlAccountingStats>{NT_NVML_SUCCESS, stats};
      });
}

std::unique_ptr<NvmlApi> open_nvml(const std::string &library) {
  auto loaded = NvmlLibrary::load(library);
  if (!loaded.library) {
    const bool named_file_exists =
        library.find('/') != std::string::npos && access(library.c_str(), F_OK) == 0;
    if (named_file_exists)
      spdlog::warn("NVML: cannot load {}: {}; no GPU device metrics", library, loaded.error);
    else
      spdlog::info("NVML not available ({}): no GPU device metrics", loaded.error);
    return nullptr;
  }
  spdlog::info("NVML: loaded {}", loaded.library->file());
  spdlog::debug("NVML symbols {}", loaded.library->symbol_report());
  return std::move(loaded.library);
}

} // namespace neutracer
