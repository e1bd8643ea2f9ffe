#include "exporters/launch_metrics.h"

#include <map>

#include "exporters/metric_builders.h"

namespace neutracer {

std::vector<MetricFamily> launch_counting_families(std::string_view mode, const CudaState &state,
                                                   const std::vector<LaunchProcessView> &views,
                                                   double trap_seconds) {
  auto info = family("neutracer_cuda_launch_counting_info",
                     "Launch counting mode of the daemon (cuda.launch_counting): exact, adaptive "
                     "or off.",
                     MetricType::gauge);
  info.samples.push_back({{{"mode", std::string(mode)}}, 1});
  auto trap = family("neutracer_cuda_launch_trap_seconds",
                     "What one counted launch costs the launching thread on this host, measured "
                     "at start in adaptive mode (0: not measured); sampled launch totals are "
                     "corrected for it.",
                     MetricType::gauge);
  trap.samples.push_back({{}, trap_seconds});

  std::map<int, const LaunchProcessView *> by_pid;
  for (const auto &view : views)
    by_pid[view.pid] = &view;
  auto window = family("neutracer_cuda_launch_sampling_ratio",
                       "Share of each sampling period in which the process's launches are "
                       "counted now: 1 = every launch, below 1 = launch totals are scaled "
                       "estimates, 0 = not counted.",
                       MetricType::gauge);
  auto counted = family("neutracer_cuda_launch_counted_time_ratio",
                        "Share of the time since discovery in which the process's launches were "
                        "counted.",
                        MetricType::gauge);
  // Exact mode probes every process system-wide: all counted all the time, no views.
  const bool every_launch = mode == "exact";
  for (const auto &[id, process] : state.processes()) {
    const auto labels = process_labels(id, process.comm, process.container);
    double window_share = every_launch ? 1.0 : 0.0;
    double counted_share = window_share;
    if (const auto view = by_pid.find(id.pid); !every_launch && view != by_pid.end()) {
      window_share = view->second->window_fraction;
      counted_share = view->second->counted_fraction;
    }
    window.samples.push_back({labels, window_share});
    counted.samples.push_back({labels, counted_share});
  }
  return {std::move(info), std::move(trap), std::move(window), std::move(counted)};
}

} // namespace neutracer
