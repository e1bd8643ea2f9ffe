// SPDX-License-Identifier: Apache-2.0
#include "exporters/bpf_map_metrics.h"

#include "exporters/metric_builders.h"

namespace neutracer {

std::vector<MetricFamily> bpf_map_families(const std::vector<BpfMapOccupancy> &maps) {
  auto entries = family("neutracer_bpf_map_entries",
                        "Entries in a BPF map at the last scan, before those of exited "
                        "processes were removed.",
                        MetricType::gauge);
  auto max_entries = family("neutracer_bpf_map_max_entries",
                            "Capacity of a BPF map; insertions beyond it fail and are counted in "
                            "neutracer_bpf_map_update_errors_total.",
                            MetricType::gauge);
  for (const auto &map : maps) {
    entries.samples.push_back({{{"map", map.map}}, static_cast<double>(map.entries)});
    max_entries.samples.push_back({{{"map", map.map}}, static_cast<double>(map.max_entries)});
  }
  return {std::move(entries), std::move(max_entries)};
}

MetricFamily
bpf_map_update_errors_family(const std::vector<std::pair<std::string, std::uint64_t>> &full) {
  auto errors =
      family("neutracer_bpf_map_update_errors_total",
             "BPF map insertions that failed because the map was full.", MetricType::counter);
  for (const auto &[map, count] : full)
    errors.samples.push_back({{{"map", map}}, static_cast<double>(count)});
  return errors;
}

} // namespace neutracer
