// SPDX-License-Identifier: Apache-2.0
#include "exporters/kernel_name_metrics.h"

#include "exporters/metric_builders.h"

namespace neutracer {

std::vector<MetricFamily> kernel_name_families(const CudaState &state) {
  std::vector<MetricFamily> out;
  const auto one = [&](std::string name, std::string help, MetricType type, double value) {
    auto f = family(std::move(name), std::move(help), type);
    f.samples.push_back({{}, value});
    out.push_back(std::move(f));
  };
  one("neutracer_cuda_kernel_names_dropped_total",
      "Kernel names and CUfunction links not kept: the process's name bound or the daemon's "
      "name byte budget was full.",
      MetricType::counter, static_cast<double>(state.kernel_names_dropped()));
  one("neutracer_cuda_kernel_name_bytes",
      "Bytes the kept kernel names and links take now (text plus a fixed cost per entry), "
      "over every traced process.",
      MetricType::gauge, static_cast<double>(state.kernel_name_bytes()));
  one("neutracer_cuda_kernel_name_budget_bytes",
      "The most bytes the kept kernel names and links may take over every traced process.",
      MetricType::gauge, static_cast<double>(state.kernel_name_max_bytes()));
  return out;
}

} // namespace neutracer
