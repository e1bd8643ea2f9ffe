// SPDX-License-Identifier: Apache-2.0
#include "exporters/detector_metrics.h"

#include <functional>
#include <map>
#include <string>

#include "exporters/metric_builders.h"

namespace neutracer {
namespace {

constexpr AlertKind kAlertKindsInOrder[] = {AlertKind::memory_leak, AlertKind::fragmentation,
                                            AlertKind::oom, AlertKind::hang};

MetricFamily per_alert_kind(std::string name, std::string help, MetricType type,
                            const std::function<double(AlertKind)> &value) {
  auto f = family(std::move(name), std::move(help), type);
  for (const auto kind : kAlertKindsInOrder)
    f.samples.push_back({{{"alert", std::string(alert_kind_name(kind))}}, value(kind)});
  return f;
}

} // namespace

void write_detector_metrics(const DetectorSet &detectors, const AlertDelivery &delivery,
                            MetricSink &sink) {
  std::vector<LabelledRow<ProcessFindings>> rows;
  rows.reserve(detectors.findings().size());
  for (const auto &[id, findings] : detectors.findings())
    rows.push_back({findings, process_labels(id, findings.comm, findings.container)});
  std::vector<MetricFamily> families; // the daemon-wide ones, after the per-process ones
  write_per_row<ProcessFindings>(
      rows, sink, "neutracer_cuda_memory_leak_suspected",
      "1 while the process's GPU memory keeps rising and is not freed (trend and rule of "
      "succession agree)",
      MetricType::gauge, [](const ProcessFindings &f) { return f.leak.suspected ? 1.0 : 0.0; });
  write_per_row<ProcessFindings>(
      rows, sink, "neutracer_cuda_memory_leak_probability",
      "Laplace's rule of succession over high-water-mark samples: (unfreed+1)/(sampled+2)",
      MetricType::gauge, [](const ProcessFindings &f) { return f.leak.probability; });
  write_per_row<ProcessFindings>(
      rows, sink, "neutracer_cuda_memory_growth_bytes_per_second",
      "Slope of the per-window minimum of GPU memory in use over the leak detector's windows",
      MetricType::gauge, [](const ProcessFindings &f) { return f.leak.growth_bytes_per_second; });
  sink.family("neutracer_cuda_memory_seconds_until_full",
              "Time until the device's free memory is gone at the current growth rate; only "
              "while growing and when the device's free memory is known",
              MetricType::gauge);
  for (const auto &row : rows)
    if (row.state.leak.seconds_until_full)
      sink.sample(row.labels, *row.state.leak.seconds_until_full);
  write_per_row<ProcessFindings>(
      rows, sink, "neutracer_cuda_memory_fragmentation_ratio",
      "1 - largest live GPU allocation / GPU bytes in use: how split the process's driver "
      "allocations are (0 = one piece)",
      MetricType::gauge, [](const ProcessFindings &f) { return f.fragmentation_ratio; });
  write_per_row<ProcessFindings>(
      rows, sink, "neutracer_cuda_memory_alloc_retries_total",
      "Allocator retries: a failed GPU allocation, frees, then a successful one of at least "
      "that size",
      MetricType::counter,
      [](const ProcessFindings &f) { return static_cast<double>(f.alloc_retries); });
  sink.family("neutracer_cuda_oom_events_total",
              "Failed GPU allocations by cause: capacity (too little memory) or "
              "fragmentation (enough memory, not in one piece)",
              MetricType::counter);
  for (const auto &row : rows)
    for (const auto cause : {OomCause::capacity, OomCause::fragmentation})
      sink.sample(row.labels, {{"cause", oom_cause_name(cause)}},
                  static_cast<double>(row.state.ooms[static_cast<std::size_t>(cause)]));
  write_per_row<ProcessFindings>(
      rows, sink, "neutracer_cuda_hang_suspected",
      "1 while a CUDA call has run past the hang threshold, or launches stopped while the "
      "process spins on a CPU",
      MetricType::gauge, [](const ProcessFindings &f) { return f.hang.suspected ? 1.0 : 0.0; });

  std::map<AlertKind, double> active;
  for (const auto &alert : detectors.active())
    active[alert.kind] += 1;
  families.push_back(per_alert_kind("neutracer_alerts_active",
                                    "Processes for which a condition alert holds now",
                                    MetricType::gauge, [&](AlertKind kind) {
                                      // OOMs are events, never active.
                                      return active.contains(kind) ? active.at(kind) : 0.0;
                                    }));
  families.push_back(per_alert_kind(
      "neutracer_alerts_total", "Alert notifications sent (journal and /api/v1/alerts)",
      MetricType::counter,
      [&](AlertKind kind) { return static_cast<double>(detectors.gate().sent(kind)); }));
  families.push_back(per_alert_kind(
      "neutracer_alerts_suppressed_total",
      "Alert notifications not sent: within the cooldown or above the global rate limit",
      MetricType::counter,
      [&](AlertKind kind) { return static_cast<double>(detectors.gate().suppressed(kind)); }));

  auto journal_errors =
      family("neutracer_journal_write_errors_total",
             "Journal entries the systemd journal did not accept", MetricType::counter);
  journal_errors.samples.push_back({{}, static_cast<double>(delivery.journal_errors)});
  families.push_back(std::move(journal_errors));
  auto exits = family("neutracer_cuda_exits_holding_memory_total",
                      "Processes that exited with GPU memory still allocated (information: the "
                      "driver frees it)",
                      MetricType::counter);
  exits.samples.push_back({{}, static_cast<double>(delivery.exited_holding_memory)});
  families.push_back(std::move(exits));
  auto exit_bytes =
      family("neutracer_cuda_memory_held_at_exit_bytes_total",
             "GPU bytes still allocated when traced processes exited", MetricType::counter);
  exit_bytes.samples.push_back({{}, static_cast<double>(delivery.bytes_held_at_exit)});
  families.push_back(std::move(exit_bytes));
  sink.write(families);
}

std::vector<MetricFamily> detector_families(const DetectorSet &detectors,
                                            const AlertDelivery &delivery) {
  FamilySink sink;
  write_detector_metrics(detectors, delivery, sink);
  return sink.take();
}

} // namespace neutracer
