// SPDX-License-Identifier: Apache-2.0
#include "exporters/gpu_health_metrics.h"

#include <array>
#include <string>
#include <utility>

#include "exporters/metric_builders.h"

namespace neutracer {
namespace {

Labels gpu_labels(const NvmlDeviceSample &sample) {
  return {{"gpu", std::to_string(sample.device.index)}};
}

bool available(const NvmlSnapshot &snapshot, NvmlCall call) {
  const auto it = snapshot.functions_available.find(std::string(nvml_call_name(call)));
  return it == snapshot.functions_available.end() || it->second;
}

// The reasons of NVML's throttle mask, as `reason` label values.
constexpr std::array<std::pair<std::uint64_t, const char *>, 9> kThrottleReasons = {{
    {NT_NVML_THROTTLE_GPU_IDLE, "gpu_idle"},
    {NT_NVML_THROTTLE_APPLICATIONS_CLOCKS_SETTING, "applications_clocks_setting"},
    {NT_NVML_THROTTLE_SW_POWER_CAP, "sw_power_cap"},
    {NT_NVML_THROTTLE_HW_SLOWDOWN, "hw_slowdown"},
    {NT_NVML_THROTTLE_SYNC_BOOST, "sync_boost"},
    {NT_NVML_THROTTLE_SW_THERMAL_SLOWDOWN, "sw_thermal_slowdown"},
    {NT_NVML_THROTTLE_HW_THERMAL_SLOWDOWN, "hw_thermal_slowdown"},
    {NT_NVML_THROTTLE_HW_POWER_BRAKE_SLOWDOWN, "hw_power_brake_slowdown"},
    {NT_NVML_THROTTLE_DISPLAY_CLOCK_SETTING, "display_clock_setting"},
}};

Labels xid_labels(Labels labels, const XidLedger::Key &key) {
  labels.emplace_back("gpu", key.first);
  labels.emplace_back("xid", key.second);
  return labels;
}

} // namespace

std::vector<MetricFamily> nvml_health_families(const NvmlSnapshot &snapshot) {
  std::vector<MetricFamily> out;
  if (!snapshot.in_use)
    return out;

  auto lost = family("neutracer_gpu_lost",
                     "1 while NVML answers NVML_ERROR_GPU_IS_LOST for the GPU: it fell off the "
                     "bus or stopped responding (its other NVML series are left out); else 0.",
                     MetricType::gauge);
  for (const auto &sample : snapshot.devices)
    lost.samples.push_back({gpu_labels(sample), sample.lost ? 1.0 : 0.0});
  for (const unsigned index : snapshot.lost_unopened)
    lost.samples.push_back({{{"gpu", std::to_string(index)}}, 1.0});
  out.push_back(std::move(lost));

  if (available(snapshot, NvmlCall::ecc_errors)) {
    auto ecc = family("neutracer_gpu_ecc_errors_total",
                      "ECC errors of the GPU's memory by type (corrected, uncorrected) and "
                      "counter: volatile since the driver was loaded, aggregate over the GPU's "
                      "life. GPUs without ECC (or with it off) have no series.",
                      MetricType::counter);
    for (const auto &sample : snapshot.devices)
      for (const auto &e : sample.ecc_errors)
        ecc.samples.push_back(
            {with(with(gpu_labels(sample), "type",
                       e.type == NvmlEccType::corrected ? "corrected" : "uncorrected"),
                  "counter",
                  e.counter == NvmlEccCounter::volatile_count ? "volatile" : "aggregate"),
             static_cast<double>(e.count)});
    out.push_back(std::move(ecc));
  }

  if (available(snapshot, NvmlCall::remapped_rows)) {
    auto rows = family("neutracer_gpu_remapped_rows",
                       "Memory rows the GPU has remapped (Ampere and later), by the errors that "
                       "caused it: correctable, uncorrectable.",
                       MetricType::gauge);
    auto pending = family("neutracer_gpu_row_remap_pending",
                          "1 while a row remapping waits for the next GPU reset (until then the "
                          "bad row may still be used); else 0.",
                          MetricType::gauge);
    auto failed =
        family("neutracer_gpu_row_remap_failed",
               "1 when a row remapping failed (the GPU needs service); else 0.", MetricType::gauge);
    for (const auto &sample : snapshot.devices)
      if (const auto &r = sample.remapped_rows) {
        rows.samples.push_back(
            {with(gpu_labels(sample), "type", "correctable"), static_cast<double>(r->corrected)});
        rows.samples.push_back({with(gpu_labels(sample), "type", "uncorrectable"),
                                static_cast<double>(r->uncorrected)});
        pending.samples.push_back({gpu_labels(sample), r->pending ? 1.0 : 0.0});
        failed.samples.push_back({gpu_labels(sample), r->failed ? 1.0 : 0.0});
      }
    out.push_back(std::move(rows));
    out.push_back(std::move(pending));
    out.push_back(std::move(failed));
  }

  if (available(snapshot, NvmlCall::retired_pages_pending)) {
    auto retired = family("neutracer_gpu_retired_pages_pending",
                          "1 while retired memory pages wait for the next GPU reset (GPUs "
                          "before Ampere; later ones remap rows instead); else 0.",
                          MetricType::gauge);
    for (const auto &sample : snapshot.devices)
      if (sample.retired_pages_pending)
        retired.samples.push_back({gpu_labels(sample), *sample.retired_pages_pending ? 1.0 : 0.0});
    out.push_back(std::move(retired));
  }

  if (available(snapshot, NvmlCall::throttle_reasons)) {
    auto throttle = family(
        "neutracer_gpu_clock_throttle_active",
        "1 for each reason that holds the GPU's clocks down at the scan (NVML's clock throttle "
        "reasons): gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown, "
        "sync_boost, sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown, "
        "display_clock_setting; else 0.",
        MetricType::gauge);
    for (const auto &sample : snapshot.devices)
      if (sample.throttle_reasons)
        for (const auto &[bit, reason] : kThrottleReasons)
          throttle.samples.push_back({with(gpu_labels(sample), "reason", reason),
                                      (*sample.throttle_reasons & bit) != 0 ? 1.0 : 0.0});
    out.push_back(std::move(throttle));
  }

  auto functions = family("neutracer_nvml_function_available",
                          "1 when the driver's NVML library has the function (versionless "
                          "name); 0 for an older driver's library that lacks it, whose series "
                          "are then left out.",
                          MetricType::gauge);
  for (const auto &[function, present] : snapshot.functions_available)
    functions.samples.push_back({{{"function", function}}, present ? 1.0 : 0.0});
  out.push_back(std::move(functions));
  return out;
}

std::vector<MetricFamily> xid_families(const GpuHealthMonitor &monitor, const CudaState &state) {
  std::vector<MetricFamily> out;
  if (!monitor.reads_kernel_log())
    return out;
  const auto &ledger = monitor.xids();
  auto by_gpu = family("neutracer_gpu_xid_errors_total",
                       "Xid reports of the NVIDIA driver in the kernel log since the daemon "
                       "started, by GPU (gpu=\"unknown\": an address no listed GPU has) and Xid "
                       "code (xid=\"other\" beyond 128 distinct pairs).",
                       MetricType::counter);
  for (const auto &[key, count] : ledger.by_gpu())
    by_gpu.samples.push_back({xid_labels({}, key), static_cast<double>(count)});
  out.push_back(std::move(by_gpu));

  auto by_process = family("neutracer_cuda_xid_errors_total",
                           "Xid reports that name a traced process (the driver's pid), by GPU "
                           "and Xid code; gone when the process exits.",
                           MetricType::counter);
  for (const auto &[id, counts] : ledger.by_process()) {
    const auto process = state.processes().find(id);
    if (process == state.processes().end())
      continue;
    const auto labels = process_labels(id, process->second.comm, process->second.container);
    for (const auto &[key, count] : counts)
      by_process.samples.push_back({xid_labels(labels, key), static_cast<double>(count)});
  }
  out.push_back(std::move(by_process));

  const auto &stats = monitor.kernel_log();
  auto records = family("neutracer_kernel_log_records_total",
                        "Kernel log records the daemon read, by result: read (parsed), "
                        "malformed (not in /dev/kmsg's format), lost (overwritten in the "
                        "kernel's ring buffer before the daemon read them: Xid reports among "
                        "them are missing).",
                        MetricType::counter);
  records.samples.push_back({{{"result", "read"}}, static_cast<double>(stats.records)});
  records.samples.push_back({{{"result", "malformed"}}, static_cast<double>(stats.malformed)});
  records.samples.push_back({{{"result", "lost"}}, static_cast<double>(stats.lost)});
  out.push_back(std::move(records));
  return out;
}

} // namespace neutracer
