// SPDX-License-Identifier: Apache-2.0
#include "exporters/container_metrics.h"

#include <map>

#include "exporters/metric_builders.h"

namespace neutracer {

Labels container_info_labels(const ContainerInfo &container) {
  Labels labels;
  append_known_labels(labels, {{"container", &container.name()},
                               {"container_id", &container.identity.id},
                               {"runtime", &container.identity.runtime},
                               {"pod_uid", &container.identity.pod_uid},
                               {"namespace", &container.pod.namespace_name},
                               {"pod", &container.pod.pod},
                               {"slurm_job", &container.identity.slurm_job}});
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
