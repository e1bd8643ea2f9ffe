// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_sampler.h"

#include <algorithm>
#include <ctime>
#include <map>
#include <spdlog/spdlog.h>

#include "nvml/nvml_status_text.h"

namespace neutracer {
namespace {

constexpr double kBytesPerKib = 1024.0;

bool is_permanent(int status) {
  return status == NT_NVML_ERROR_NOT_SUPPORTED || status == NT_NVML_ERROR_FUNCTION_NOT_FOUND;
}

std::string describe(const std::optional<double> &value) {
  return value ? fmt::format("{:g}", *value) : std::string("-");
}

// NVML averages a process's share over the period since the previous query, idle time included
// (seen on an H100 with R580); a period longer than its sample buffer is cut here.
ProcessGpuTime::Settings gpu_time_settings(std::chrono::milliseconds scan_interval) {
  const double interval = std::chrono::duration<double>(scan_interval).count();
  return {interval, std::max(5 * interval, 10.0)};
}

} // namespace

std::uint64_t NvmlSampler::default_wall_clock_us() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000u +
         static_cast<std::uint64_t>(now.tv_nsec) / 1000u;
}

NvmlSampler::NvmlSampler(NvmlApi &api) : NvmlSampler(api, Settings{}) {}

NvmlSampler::NvmlSampler(NvmlApi &api, Settings settings)
    : api_(api), settings_(std::move(settings)),
      gpu_time_(gpu_time_settings(settings_.scan_interval)) {}

template <typename Query>
auto NvmlSampler::ask(unsigned device, NvmlCall call, int variant, Query query)
    -> std::optional<decltype(query().value)> {
  const auto key = std::tuple{device, call, variant};
  if (unsupported_.contains(key) || lost_now_.contains(device))
    return std::nullopt;
  auto result = query();
  if (result.ok())
    return std::move(result.value);
  record_failure(device, call, result.status);
  if (result.status == NT_NVML_ERROR_GPU_IS_LOST && device != kNoDevice)
    lost_now_.insert(device); // its other calls would fail the same way: not asked this scan
  if (result.status == NT_NVML_ERROR_FUNCTION_NOT_FOUND)
    missing_functions_.insert(call);
  if (is_permanent(result.status))
    unsupported_.insert(key);
  return std::nullopt;
}

void NvmlSampler::record_failure(unsigned device, NvmlCall call, int status) {
  ++errors_[static_cast<std::size_t>(call)];
  if (!logged_.insert({device, call, status}).second)
    return;
  const auto where = device == kNoDevice ? std::string() : fmt::format(" on GPU {}", device);
  if (call == NvmlCall::init)
    spdlog::warn("NVML: nvmlInit failed: {}; no GPU device metrics until it succeeds (retried "
                 "every {} scans, logged once)",
                 nvml_status_text(status), kInitRetryScans);
  else if (is_permanent(status))
    spdlog::info("NVML: {}{} is not available: {}; its values are left out", nvml_call_name(call),
                 where, nvml_status_text(status));
  else
    spdlog::warn("NVML: {}{} failed: {}; its values are left out while it fails (logged once)",
                 nvml_call_name(call), where, nvml_status_text(status));
}

bool NvmlSampler::ready() {
  if (!initialised_) {
    if (scans_until_init_ > 0) {
      --scans_until_init_;
      return false;
    }
    if (const int status = api_.init(); status != NT_NVML_SUCCESS) {
      record_failure(kNoDevice, NvmlCall::init, status);
      scans_until_init_ = kInitRetryScans - 1;
      return false;
    }
    initialised_ = true;
  }
  if (!listed_)
    listed_ = list_devices();
  return listed_;
}

bool NvmlSampler::list_devices() {
  const auto count =
      ask(kNoDevice, NvmlCall::device_count, 0, [this] { return api_.device_count(); });
  if (!count)
    return false;
  driver_version_ = ask(kNoDevice, NvmlCall::driver_version, 0, [this] {
                      return api_.driver_version();
                    }).value_or("");
  for (unsigned index = 0; index < *count; ++index) {
    if (const int status = api_.open_device(index); status != NT_NVML_SUCCESS) {
      record_failure(index, NvmlCall::device_handle, status);
      if (status == NT_NVML_ERROR_GPU_IS_LOST)
        lost_unopened_.push_back(index);
      continue;
    }
    NvmlDevice device;
    device.index = index;
    device.uuid = ask(index, NvmlCall::uuid, 0, [&] { return api_.uuid(index); }).value_or("");
    device.name = ask(index, NvmlCall::name, 0, [&] { return api_.name(index); }).value_or("");
    device.pci_bus_id =
        ask(index, NvmlCall::pci_info, 0, [&] { return api_.pci_bus_id(index); }).value_or("");
    device.minor_number =
        ask(index, NvmlCall::minor_number, 0, [&] { return api_.minor_number(index); });
    spdlog::info("NVML GPU {}: {} {} at {}, /dev/nvidia{}, driver {}", index, device.name,
                 device.uuid, device.pci_bus_id,
                 device.minor_number ? std::to_string(*device.minor_number) : "?", driver_version_);
    devices_.push_back(std::move(device));
  }
  if (*count == 0)
    spdlog::info("NVML: no GPUs");
  return true;
}

NvmlDeviceSample NvmlSampler::sample_device(const NvmlDevice &device) {
  const unsigned i = device.index;
  NvmlDeviceSample s;
  s.device = device;
  if (const auto u = ask(i, NvmlCall::utilization, 0, [&] { return api_.utilization(i); })) {
    s.gpu_utilization_ratio = u->gpu_percent / 100.0;
    s.memory_bandwidth_utilization_ratio = u->memory_percent / 100.0;
  }
  if (const auto m = ask(i, NvmlCall::memory_info, 0, [&] { return api_.memory(i); })) {
    s.memory_used_bytes = m->used_bytes;
    s.memory_total_bytes = m->total_bytes;
  }
  if (const auto t = ask(i, NvmlCall::temperature, 0, [&] { return api_.temperature_celsius(i); }))
    s.temperature_celsius = *t;
  if (const auto mw = ask(i, NvmlCall::power_usage, 0, [&] { return api_.power_milliwatts(i); }))
    s.power_watts = *mw / 1000.0;
  if (const auto mj = ask(i, NvmlCall::energy, 0, [&] { return api_.energy_millijoules(i); }))
    s.energy_joules = static_cast<double>(*mj) / 1000.0;
  for (const auto direction : {NvmlDirection::tx, NvmlDirection::rx}) {
    const int variant = static_cast<int>(direction);
    const auto pcie = ask(i, NvmlCall::pcie_throughput, variant,
                          [&] { return api_.pcie_kib_per_second(i, direction); });
    const auto nvlink =
        ask(i, NvmlCall::field_values, variant, [&] { return api_.nvlink_data_kib(i, direction); });
    auto &pcie_out =
        direction == NvmlDirection::tx ? s.pcie_tx_bytes_per_second : s.pcie_rx_bytes_per_second;
    auto &nvlink_out = direction == NvmlDirection::tx ? s.nvlink_tx_bytes : s.nvlink_rx_bytes;
    if (pcie)
      pcie_out = *pcie * kBytesPerKib;
    if (nvlink)
      nvlink_out = static_cast<double>(*nvlink) * kBytesPerKib;
  }
  if (const auto processes =
          ask(i, NvmlCall::compute_processes, 0, [&] { return api_.compute_processes(i); })) {
    // Under MIG a process appears once per GPU instance it uses: one series per pid.
    std::map<std::uint32_t, std::uint64_t> by_pid;
    for (const auto &process : *processes)
      if (process.used_bytes != NT_NVML_VALUE_NOT_AVAILABLE)
        by_pid[process.pid] += process.used_bytes;
    s.processes.emplace();
    for (const auto &[pid, bytes] : by_pid)
      s.processes->push_back({pid, bytes});
  }
  sample_health(i, s);
  s.lost = lost_now_.contains(i);
  spdlog::debug("NVML GPU {}: utilization {}, memory {}/{} bytes, {} C, {} W, PCIe tx/rx {}/{} "
                "B/s, NVLink tx/rx {}/{} B, {} processes",
                i, describe(s.gpu_utilization_ratio),
                s.memory_used_bytes ? std::to_string(*s.memory_used_bytes) : "-",
                s.memory_total_bytes ? std::to_string(*s.memory_total_bytes) : "-",
                describe(s.temperature_celsius), describe(s.power_watts),
                describe(s.pcie_tx_bytes_per_second), describe(s.pcie_rx_bytes_per_second),
                describe(s.nvlink_tx_bytes), describe(s.nvlink_rx_bytes),
                s.processes ? std::to_string(s.processes->size()) : "-");
  return s;
}

void NvmlSampler::sample_health(unsigned i, NvmlDeviceSample &s) {
  for (const auto type : {NvmlEccType::corrected, NvmlEccType::uncorrected})
    for (const auto counter : {NvmlEccCounter::volatile_count, NvmlEccCounter::aggregate}) {
      const int variant = static_cast<int>(type) * 2 + static_cast<int>(counter);
      if (const auto count = ask(i, NvmlCall::ecc_errors, variant,
                                 [&] { return api_.ecc_errors(i, type, counter); }))
        s.ecc_errors.push_back({type, counter, *count});
    }
  s.remapped_rows = ask(i, NvmlCall::remapped_rows, 0, [&] { return api_.remapped_rows(i); });
  s.retired_pages_pending =
      ask(i, NvmlCall::retired_pages_pending, 0, [&] { return api_.retired_pages_pending(i); });
  s.throttle_reasons =
      ask(i, NvmlCall::throttle_reasons, 0, [&] { return api_.throttle_reasons(i); });
}

std::optional<bool> NvmlSampler::sample_process_utilization(unsigned i,
                                                            const ProcessGpuTime::Traced &traced,
                                                            std::uint64_t now_us,
                                                            std::set<std::uint32_t> &busy_pids) {
  using Samples = std::vector<NvmlProcessUtilization>;
  const auto last_seen_us = gpu_time_.last_seen_us(i, now_us);
  const auto samples = ask(i, NvmlCall::process_utilization, 0, [&] {
    auto result = api_.process_utilization(i, last_seen_us);
    if (result.status == NT_NVML_ERROR_NOT_FOUND) // no process was busy since last_seen_us
      return NvmlResult<Samples>{NT_NVML_SUCCESS, {}};
    return result;
  });
  if (!samples) {
    if (unsupported_.contains({i, NvmlCall::process_utilization, 0}))
      return std::nullopt;
    return false;
  }
  gpu_time_.add(i, *samples, traced, now_us);
  for (const auto &sample : *samples) {
    spdlog::debug("NVML GPU {}: pid {} SM {}% memory {}% at {} us (since {} us){}", i, sample.pid,
                  sample.sm_percent, sample.memory_percent, sample.timestamp_us, last_seen_us,
                  traced.contains(sample.pid) ? "" : ", not traced");
    if (traced.contains(sample.pid))
      busy_pids.insert(sample.pid);
  }
  return true;
}

void NvmlSampler::sample_accounting(unsigned i, NvmlDeviceSample &s,
                                    const ProcessGpuTime::Traced &traced,
                                    const std::set<std::uint32_t> &busy_pids,
                                    NvmlSnapshot &snapshot) {
  using Stats = std::optional<NvmlAccountingStats>;
  s.accounting_enabled =
      ask(i, NvmlCall::accounting_mode, 0, [&] { return api_.accounting_mode(i); });
  if (!s.accounting_enabled.value_or(false))
    return;
  // The traced processes NVML lists on this GPU or saw busy there: one call each.
  std::set<std::uint32_t> pids = busy_pids;
  if (s.processes)
    for (const auto &process : *s.processes)
      if (traced.contains(process.pid))
        pids.insert(process.pid);
  for (const auto pid : pids) {
    const auto stats = ask(i, NvmlCall::accounting_stats, 0, [&] {
      const auto result = api_.accounting_stats(i, pid);
      if (result.status == NT_NVML_ERROR_NOT_FOUND) // no record of it on this GPU
        return NvmlResult<Stats>{NT_NVML_SUCCESS, std::nullopt};
      return NvmlResult<Stats>{result.status, result.ok() ? Stats(result.value) : std::nullopt};
    });
    if (stats && *stats)
      snapshot.process_accounting.push_back({traced.at(pid), i, **stats});
  }
}

NvmlSnapshot NvmlSampler::sample(const ProcessGpuTime::Traced &traced) {
  NvmlSnapshot snapshot;
  snapshot.in_use = true;
  lost_now_.clear();
  if (ready()) {
    snapshot.ready = true;
    snapshot.driver_version = driver_version_;
    const auto now_us = settings_.wall_clock_us();
    bool supported = false, answered = false;
    for (const auto &device : devices_) {
      auto s = sample_device(device);
      std::set<std::uint32_t> busy_pids;
      if (const auto up = sample_process_utilization(device.index, traced, now_us, busy_pids)) {
        supported = true;
        answered |= *up;
      }
      sample_accounting(device.index, s, traced, busy_pids, snapshot);
      s.lost = lost_now_.contains(device.index);
      snapshot.devices.push_back(std::move(s));
    }
    gpu_time_.retain(traced);
    for (const auto &[key, busy] : gpu_time_.busy())
      snapshot.process_gpu_time.push_back(
          {key.first, key.second, busy.sm_seconds, busy.memory_seconds});
    if (supported)
      snapshot.process_utilization_up = answered;
    snapshot.lost_unopened = lost_unopened_;
    for (std::size_t call = 0; call < kNvmlCallNames.size(); ++call)
      snapshot.functions_available[std::string(kNvmlCallNames[call])] =
          !missing_functions_.contains(static_cast<NvmlCall>(call));
  }
  for (std::size_t call = 0; call < kNvmlCallNames.size(); ++call)
    snapshot.errors_by_call[std::string(kNvmlCallNames[call])] = errors_[call];
  return snapshot;
}

} // namespace neutracer
