// SPDX-License-Identifier: Apache-2.0
#include "exporters/container_metrics.h"

#include <map>

#include "exporters/metric_builders.h"

namespace neutracer {

Labels container_info_labels(const ContainerInfo &container) {
  Labels labels;
  for (const auto &[name, value] :
       {std::pair{"container", &container.name()},
        std::pair{"container_id", &container.identity.id},
        std::pair{"runtime", &container.identity.runtime},
        std::pair{"pod_uid", &container.identity.pod_uid},
        std::pair{"namespace", &container.pod.namespace_name}, std::pair{"pod", &container.pod.pod},
        std::pair{"slurm_job", &container.identity.slurm_job}})
    if (!value->empty())
      labels.emplace_back(name, *value);
  return labels;
}

MetricFamily container_info_family(const CudaState &state) {
  // Processes of one container share its id, and so its names: one series per id.
  std::map<std::string, const ContainerInfo *> containers;
  for (const auto &[id, process] : state.processes())
    if (!process.container.identity.id.empty())
      containers.emplace(process.container.identity.id, &process.container);
  auto f = family("neutracer_container_info",
                  "Container of traced processes: id, runtime, pod uid and Slurm job from the "
                  "cgroup path, namespace, pod and container name from the kubelet's log "
                  "names or Docker's; always 1",
                  MetricType::gauge);
  for (const auto &[id, container] : containers)
    f.samples.push_back({container_info_labels(*container), 1});
  return f;
}

} // namespace neutracer
