// SPDX-License-Identifier: Apache-2.0
#include "collectors/bpf_maps_collector.h"

#include "exporters/bpf_map_metrics.h"

namespace neutracer {

void BpfMapsCollector::write(MetricSink &sink) const {
  const auto &cuda = cuda_.tracer_stats();
  std::vector<std::pair<std::string, std::uint64_t>> full = {
      {"launches", cuda.launch_map_full},
      {"inflight", cuda.inflight_map_full},
      {"launch_stacks", cuda.launch_stacks_full},
      {"sampled_blocks", cuda.sampled_blocks_full}};
  if (os_tracer_ != nullptr) {
    const auto os = os_tracer_->stats();
    full.insert(full.end(), {{"os_traced", os.traced_map_full},
                             {"os_counters", os.counters_map_full},
                             {"os_threads", os.threads_map_full},
                             {"os_io_inflight", os.io_map_full},
                             {"os_sockets", os.sockets_map_full}});
  }
  sink.write({bpf_map_update_errors_family(full)});
  sink.write(bpf_map_families(cuda_.map_occupancy()));
}

} // namespace neutracer
