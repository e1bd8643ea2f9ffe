// SPDX-License-Identifier: Apache-2.0
#include "exporters/kernel_name_metrics.h"

#include <gtest/gtest.h>

#include "metric_lookup.h"

namespace neutracer {
namespace {

NameEvent name(std::uint64_t handle, std::string text) {
  NameEvent e;
  e.api = NT_API_MODULE_GET_FUNCTION;
  e.tgid = 7;
  e.proc_start_ns = 1'000'000'000;
  e.handle = handle;
  e.name = std::move(text);
  return e;
}

TEST(KernelNameMetrics, DroppedHeldAndBudget) {
  CudaState::Settings settings;
  settings.max_kernels_per_process = 1;
  settings.max_kernel_names_per_process = 2;
  settings.max_kernel_name_bytes = 1000;
  CudaState state(settings);
  state.apply(name(1, "alpha"));
  state.apply(name(2, "bravo"));
  state.apply(name(3, "charlie")); // over the process's bound of 2
  const auto families = kernel_name_families(state);
  const auto value = [&](const std::string &family) {
    const auto &f = test::family(families, family);
    EXPECT_EQ(f.samples.size(), 1u) << family;
    return f.samples.at(0).value;
  };
  EXPECT_EQ(test::family(families, "neutracer_cuda_kernel_names_dropped_total").type,
            MetricType::counter);
  EXPECT_EQ(value("neutracer_cuda_kernel_names_dropped_total"), 1);
  // Two names: label and full name each, and their entries.
  EXPECT_EQ(value("neutracer_cuda_kernel_name_bytes"), 20 + 2 * kKernelNameEntryBytes);
  EXPECT_EQ(value("neutracer_cuda_kernel_name_budget_bytes"), 1000);
}

} // namespace
} // namespace neutracer
