// SPDX-License-Identifier: Apache-2.0
#pragma once
// Occupancy of the daemon's BPF maps: how close each is to dropping entries.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "exposition/exposition.h"

namespace neutracer {

struct BpfMapOccupancy {
  std::string map; // the label, as in neutracer_bpf_map_update_errors_total
  std::size_t entries = 0;
  std::size_t max_entries = 0;
};

// neutracer_bpf_map_entries{map} and neutracer_bpf_map_max_entries{map}.
std::vector<MetricFamily> bpf_map_families(const std::vector<BpfMapOccupancy> &maps);

// neutracer_bpf_map_update_errors_total{map}: insertions refused because the map was full, as
// (map, count) in the order given.
MetricFamily
bpf_map_update_errors_family(const std::vector<std::pair<std::string, std::uint64_t>> &full);

} // namespace neutracer
