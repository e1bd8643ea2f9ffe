// SPDX-License-Identifier: Apache-2.0
#include "exporters/process_gpu_time_metrics.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "exporters/metric_builders.h"

namespace neutracer {
namespace {

// The process's labels and gpu, or nullopt when the state no longer has the process.
std::optional<Labels> labels_of(const CudaState &state, const ProcessId &id, unsigned gpu) {
  const auto process = state.processes().find(id);
  if (process == state.processes().end())
    return std::nullopt;
  return with(process_labels(id, process->second.comm, process->second.container), "gpu",
              std::to_string(gpu));
}

} // namespace

std::vector<MetricFamily> process_gpu_time_families(const NvmlSnapshot &snapshot,
                                                    const CudaState &state) {
  std::vector<MetricFamily> out;
  if (!snapshot.in_use)
    return out;

  auto sm = family("neutracer_process_gpu_busy_seconds_total",
                   "Time the GPU's SMs were busy with the process's kernels, from NVML's "
                   "per-process utilization samples (nvmlDeviceGetProcessUtilization): each "
                   "sample's SM share times the period it averages. From the process's first "
                   "sample on the GPU on; rate() is the process's share of the GPU.",
                   MetricType::counter);
  auto memory = family("neutracer_process_gpu_memory_busy_seconds_total",
                       "Time the GPU's memory controller was busy with the process's reads and "
                       "writes, from the same NVML samples as "
                       "neutracer_process_gpu_busy_seconds_total.",
                       MetricType::counter);
  for (const auto &entry : snapshot.process_gpu_time)
    if (const auto labels = labels_of(state, entry.process, entry.gpu)) {
      sm.samples.push_back({*labels, entry.sm_busy_seconds});
      memory.samples.push_back({*labels, entry.memory_busy_seconds});
    }
  out.push_back(std::move(sm));
  out.push_back(std::move(memory));

  auto gpu_share = family("neutracer_process_gpu_accounting_utilization_ratio",
                          "NVML accounting (GPUs with accounting mode on, nvidia-smi -am 1): "
                          "share of the process's life so far in which one of its kernels ran "
                          "on the GPU.",
                          MetricType::gauge);
  auto memory_share = family("neutracer_process_gpu_accounting_memory_utilization_ratio",
                             "NVML accounting: share of the process's life so far in which the "
                             "GPU's memory was read or written for it.",
                             MetricType::gauge);
  auto max_memory = family("neutracer_process_gpu_accounting_max_memory_bytes",
                           "NVML accounting: the most device memory the process has held on "
                           "the GPU at once.",
                           MetricType::gauge);
  for (const auto &entry : snapshot.process_accounting) {
    const auto labels = labels_of(state, entry.process, entry.gpu);
    if (!labels)
      continue;
    const auto &stats = entry.stats;
    if (stats.gpu_percent)
      gpu_share.samples.push_back({*labels, std::min(*stats.gpu_percent, 100u) / 100.0});
    if (stats.memory_percent)
      memory_share.samples.push_back({*labels, std::min(*stats.memory_percent, 100u) / 100.0});
    if (stats.max_memory_bytes)
      max_memory.samples.push_back({*labels, static_cast<double>(*stats.max_memory_bytes)});
  }
  out.push_back(std::move(gpu_share));
  out.push_back(std::move(memory_share));
  out.push_back(std::move(max_memory));
  return out;
}

} // namespace neutracer
