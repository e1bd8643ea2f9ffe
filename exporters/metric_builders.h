#pragma once
// The labels shared by the exporters' per-process series.
#include <string>
#include <utility>

#include "common/process_id.h"
#include "containers/container_info.h"
#include "exposition/exposition.h"

namespace neutracer {

// The labels every per-process series carries: pid, comm and, inside a container, container
// (the id); namespace and pod where the kubelet's log names resolved them.
inline Labels process_labels(const ProcessId &id, const std::string &comm,
                             const ContainerInfo &container) {
  Labels labels{{"pid", std::to_string(id.pid)}, {"comm", comm}};
  if (!container.identity.id.empty())
    labels.emplace_back("container", container.identity.id);
  if (!container.pod.namespace_name.empty())
    labels.emplace_back("namespace", container.pod.namespace_name);
  if (!container.pod.pod.empty())
    labels.emplace_back("pod", container.pod.pod);
  return labels;
}

} // namespace neutracer
