// SPDX-License-Identifier: Apache-2.0
#include "exporters/nvml_metrics.h"

#include <optional>
#include <string>
#include <utility>

#include "exporters/metric_builders.h"

namespace neutracer {
namespace {

Labels gpu_labels(const NvmlDeviceSample &sample) {
  return {{"gpu", std::to_string(sample.device.index)}};
}

// One sample per device that has the value.
template <typename Value>
MetricFamily per_device(const NvmlSnapshot &snapshot, std::string name, std::string help,
                        MetricType type, std::optional<Value> NvmlDeviceSample::*value) {
  auto f = family(std::move(name), std::move(help), type);
  for (const auto &sample : snapshot.devices)
    if (const auto &v = sample.*value)
      f.samples.push_back({gpu_labels(sample), static_cast<double>(*v)});
  return f;
}

// One sample per device and direction (direction="tx", direction="rx").
MetricFamily per_direction(const NvmlSnapshot &snapshot, std::string name, std::string help,
                           MetricType type, std::optional<double> NvmlDeviceSample::*tx,
                           std::optional<double> NvmlDeviceSample::*rx) {
  auto f = family(std::move(name), std::move(help), type);
  for (const auto &sample : snapshot.devices)
    for (const auto &[direction, value] : {std::pair{"tx", tx}, std::pair{"rx", rx}})
      if (const auto &v = sample.*value)
        f.samples.push_back({with(gpu_labels(sample), "direction", direction), *v});
  return f;
}

} // namespace

std::vector<MetricFamily> nvml_families(const NvmlSnapshot &snapshot) {
  std::vector<MetricFamily> out;
  if (!snapshot.in_use)
    return out;
  using S = NvmlDeviceSample;

  auto info = family("neutracer_gpu_info",
                     "GPU as NVML lists it: gpu is the NVML device index (PCI bus order, as "
                     "nvidia-smi numbers GPUs); always 1.",
                     MetricType::gauge);
  for (const auto &sample : snapshot.devices) {
    const auto &d = sample.device;
    info.samples.push_back({{{"gpu", std::to_string(d.index)},
                             {"uuid", d.uuid},
                             {"name", d.name},
                             {"pci_bus_id", d.pci_bus_id},
                             {"driver_version", snapshot.driver_version}},
                            1});
  }
  out.push_back(std::move(info));

  out.push_back(per_device(snapshot, "neutracer_gpu_utilization_ratio",
                           "Fraction of NVML's last sample period (1/6 s to 1 s by product) in "
                           "which one or more kernels ran on the GPU.",
                           MetricType::gauge, &S::gpu_utilization_ratio));
  out.push_back(per_device(snapshot, "neutracer_gpu_memory_bandwidth_utilization_ratio",
                           "Fraction of NVML's last sample period in which device memory was "
                           "being read or written.",
                           MetricType::gauge, &S::memory_bandwidth_utilization_ratio));
  out.push_back(per_device(snapshot, "neutracer_gpu_memory_used_bytes",
                           "Device memory in use on the GPU as NVML counts it: every process's "
                           "allocations, CUDA contexts and driver reservations.",
                           MetricType::gauge, &S::memory_used_bytes));
  out.push_back(per_device(snapshot, "neutracer_gpu_memory_total_bytes",
                           "Device memory of the GPU as NVML reports it.", MetricType::gauge,
                           &S::memory_total_bytes));
  out.push_back(per_device(snapshot, "neutracer_gpu_temperature_celsius",
                           "Temperature of the GPU die (NVML's GPU sensor).", MetricType::gauge,
                           &S::temperature_celsius));
  out.push_back(per_device(snapshot, "neutracer_gpu_power_watts",
                           "Power draw of the GPU board as NVML reports it (averaged by the "
                           "driver over about a second on most products).",
                           MetricType::gauge, &S::power_watts));
  out.push_back(per_device(snapshot, "neutracer_gpu_energy_joules_total",
                           "Energy the GPU has used since the driver was loaded.",
                           MetricType::counter, &S::energy_joules));
  out.push_back(per_direction(
      snapshot, "neutracer_gpu_pcie_throughput_bytes_per_second",
      "PCIe payload of the GPU over NVML's 20 ms window at the last scan (a spot sample, not an "
      "average), by direction: tx sent by the GPU, rx received by it.",
      MetricType::gauge, &S::pcie_tx_bytes_per_second, &S::pcie_rx_bytes_per_second));
  out.push_back(per_direction(
      snapshot, "neutracer_gpu_nvlink_data_bytes_total",
      "NVLink payload of the GPU since the driver was loaded, summed over its links, by "
      "direction: tx sent by the GPU, rx received by it.",
      MetricType::counter, &S::nvlink_tx_bytes, &S::nvlink_rx_bytes));

  auto processes = family("neutracer_nvml_process_memory_used_bytes",
                          "Device memory NVML attributes to a compute process on the GPU, "
                          "including its CUDA context; pid is in the host's PID namespace.",
                          MetricType::gauge);
  for (const auto &sample : snapshot.devices)
    if (sample.processes)
      for (const auto &process : *sample.processes)
        processes.samples.push_back({with(gpu_labels(sample), "pid", std::to_string(process.pid)),
                                     static_cast<double>(process.used_bytes)});
  out.push_back(std::move(processes));

  auto errors = family("neutracer_nvml_errors_total",
                       "NVML calls that failed, by function (versionless name); a value NVML "
                       "does not support on a GPU is counted once and not asked again.",
                       MetricType::counter);
  for (const auto &[call, count] : snapshot.errors_by_call)
    errors.samples.push_back({{{"call", call}}, static_cast<double>(count)});
  out.push_back(std::move(errors));
  return out;
}

} // namespace neutracer
