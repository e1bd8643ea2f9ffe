// SPDX-License-Identifier: Apache-2.0
#include "exporters/call_site_metrics.h"

namespace neutracer {

std::vector<MetricFamily> call_site_families(std::uint64_t sites, std::uint64_t python_rejected) {
  auto kept = family("neutracer_call_sites",
                     "Call sites kept, over all processes (stacks.max_sites bounds it).",
                     MetricType::gauge);
  kept.samples.push_back({{}, static_cast<double>(sites)});
  auto rejected = family("neutracer_python_stacks_rejected_total",
                         "Python stacks read from the kernel that did not match their key (a "
                         "probe preempted while storing); deleted, and taken again at the next "
                         "call.",
                         MetricType::counter);
  rejected.samples.push_back({{}, static_cast<double>(python_rejected)});
  return {std::move(kept), std::move(rejected)};
}

} // namespace neutracer
