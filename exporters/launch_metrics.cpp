// SPDX-License-Identifier: Apache-2.0
#include "exporters/launch_metrics.h"

#include <map>

#include "exporters/metric_builders.h"

namespace neutracer {

void write_launch_counting_metrics(std::string_view mode, const CudaState &state,
                                   const std::vector<LaunchProcessView> &views, double trap_seconds,
                                   MetricSink &sink) {
  sink.family("neutracer_cuda_launch_counting_info",
              "Launch counting mode of the daemon (cuda.launch_counting): exact, adaptive "
              "or off.",
              MetricType::gauge);
  sink.sample({}, {{"mode", mode}}, 1);
  sink.family("neutracer_cuda_launch_trap_seconds",
              "What one counted launch costs the launching thread on this host, measured "
              "at start in adaptive mode (0: not measured); sampled launch totals are "
              "corrected for it.",
              MetricType::gauge);
  sink.sample({}, trap_seconds);

  std::map<int, const LaunchProcessView *> by_pid;
  for (const auto &view : views)
    by_pid[view.pid] = &view;
  // Without per-process probes (no views) exact mode counts every process all the time; with
  // them (a rule samples or switches off some process) each process's view says.
  const bool every_launch = mode == "exact";
  struct Shares {
    Labels labels;
    double window = 0;  // of the sampling period, now
    double counted = 0; // of the time since discovery
    double error = 0;   // 95 % relative error bound of its totals
  };
  std::vector<Shares> shares;
  shares.reserve(state.processes().size());
  for (const auto &[id, process] : state.processes()) {
    Shares share{process_labels(id, process.comm, process.container), every_launch ? 1.0 : 0.0,
                 every_launch ? 1.0 : 0.0};
    if (const auto view = by_pid.find(id.pid); view != by_pid.end()) {
      share.window = view->second->window_fraction;
      share.counted = view->second->counted_fraction;
      share.error = view->second->relative_error;
    }
    shares.push_back(std::move(share));
  }
  const struct {
    const char *name;
    const char *help;
    double Shares::*value;
  } families[] = {
      {"neutracer_cuda_launch_sampling_ratio",
       "Share of each sampling period in which the process's launches are counted now: 1 = "
       "every launch, below 1 = launch totals are scaled estimates, 0 = not counted.",
       &Shares::window},
      {"neutracer_cuda_launch_counted_time_ratio",
       "Share of the time since discovery in which the process's launches were counted.",
       &Shares::counted},
      {"neutracer_cuda_launch_estimate_relative_error",
       "95 % bound on the relative error of the process's launch totals: 0 when every launch "
       "was counted, 1 when no bound is known yet (fewer than three sampled windows); the "
       "spread of the window rates plus the share of window time the counted launches' traps "
       "took.",
       &Shares::error},
  };
  for (const auto &family : families) {
    sink.family(family.name, family.help, MetricType::gauge);
    for (const auto &share : shares)
      sink.sample(share.labels, share.*family.value);
  }
}

std::vector<MetricFamily> launch_counting_families(std::string_view mode, const CudaState &state,
                                                   const std::vector<LaunchProcessView> &views,
                                                   double trap_seconds) {
  FamilySink sink;
  write_launch_counting_metrics(mode, state, views, trap_seconds, sink);
  return sink.take();
}

} // namespace neutracer
