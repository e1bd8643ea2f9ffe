// SPDX-License-Identifier: Apache-2.0
#pragma once
// The labels shared by the exporters' per-process series.
#include <string>
#include <utility>

#include "common/process_id.h"
#include "containers/container_info.h"
#include "exposition/exposition.h"

namespace neutracer {

// The labels every per-process series carries: pid, comm and, where known, container (the
// container's name: the pod spec's in Kubernetes, Docker's), container_id (64-hex id from the
// cgroup path), namespace and pod (from the kubelet's log names) and slurm_job (the Slurm job id
// from the cgroup path). Those unknown are left out. `container` held the id until
// container_id took it (docs/metrics.md, "Breaking change: container labels").
inline Labels process_labels(const ProcessId &id, const std::string &comm,
                             const ContainerInfo &container) {
  Labels labels{{"pid", std::to_string(id.pid)}, {"comm", comm}};
  for (const auto &[name, value] :
       {std::pair{"container", &container.name()},
        std::pair{"container_id", &container.identity.id},
        std::pair{"namespace", &container.pod.namespace_name}, std::pair{"pod", &container.pod.pod},
        std::pair{"slurm_job", &container.identity.slurm_job}})
    if (!value->empty())
      labels.emplace_back(name, *value);
  return labels;
}

} // namespace neutracer
