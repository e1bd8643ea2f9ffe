// SPDX-License-Identifier: Apache-2.0
#include "exporters/allocator_metrics.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "exporters/metric_builders.h"

namespace neutracer {

void write_allocator_metrics(const std::map<ProcessId, AllocatorView> &views,
                             const AllocatorViewCounts &counts, const CudaState &state,
                             MetricSink &sink) {
  std::vector<LabelledRow<AllocatorView>> rows;
  std::uint64_t open = 0;
  for (const auto &[id, view] : views) {
    open += view.open ? 1 : 0;
    if (const auto process = state.processes().find(id); process != state.processes().end())
      rows.push_back({view, process_labels(id, process->second.comm, process->second.container)});
  }
  sink.family("neutracer_allocator_views_open",
              "Processes whose PyTorch allocator view is open (probes attached)",
              MetricType::gauge);
  sink.sample({}, static_cast<double>(open));
  sink.family("neutracer_allocator_views_opened_total",
              "Allocator views opened, by why: growth (device memory kept rising) or requested "
              "(through the API)",
              MetricType::counter);
  for (const auto reason : {InvestigationReason::growth, InvestigationReason::requested})
    sink.sample({}, {{"reason", investigation_reason_name(reason)}},
                static_cast<double>(counts.opened[static_cast<std::size_t>(reason)]));
  sink.family("neutracer_allocator_view_failures_total",
              "Allocator views that could not open: no_library (no libc10_cuda.so mapped), "
              "no_probes (a PyTorch built without its static tracepoints), attach (the kernel "
              "refused the probes)",
              MetricType::counter);
  for (std::size_t failure = 0; failure < kAllocatorViewFailures; ++failure)
    sink.sample(
        {}, {{"reason", allocator_view_failure_name(static_cast<AllocatorViewFailure>(failure))}},
        static_cast<double>(counts.failed[failure]));
  sink.family("neutracer_allocator_view_late_events_total",
              "Tensor block events that arrived after their process's view closed (dropped)",
              MetricType::counter);
  sink.sample({}, static_cast<double>(counts.late_events));

  write_per_row<AllocatorView>(
      rows, sink, "neutracer_allocator_view_open",
      "1 while the process's allocator view is open; 0 for its last view, kept while the "
      "process lives",
      MetricType::gauge, [](const AllocatorView &v) { return v.open ? 1.0 : 0.0; });
  write_per_row<AllocatorView>(
      rows, sink, "neutracer_allocator_live_bytes",
      "Bytes of tensors handed out by PyTorch's caching allocator since the view opened and "
      "still live (sampled by bytes, so an estimate)",
      MetricType::gauge,
      [](const AllocatorView &v) { return static_cast<double>(v.ledger.live_bytes()); });
  write_per_row<AllocatorView>(
      rows, sink, "neutracer_allocator_live_bytes_rising",
      "1 while the view's per-window minimum of live tensor bytes rises steadily (a leak "
      "seen through the pool)",
      MetricType::gauge, [](const AllocatorView &v) { return v.verdict.rising ? 1.0 : 0.0; });
  write_per_row<AllocatorView>(
      rows, sink, "neutracer_allocator_live_growth_bytes_per_second",
      "Slope of the per-window minimum of live tensor bytes over the view's windows",
      MetricType::gauge, [](const AllocatorView &v) { return v.verdict.growth_bytes_per_second; });
}

} // namespace neutracer
