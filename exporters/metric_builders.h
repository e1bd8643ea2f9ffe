#pragma once
// Small builders shared by the exporters that turn state into metric families.
#include <string>
#include <utility>

#include "daemon/cuda_discovery.h"
#include "exporters/exposition.h"

namespace neutracer {

inline MetricFamily family(std::string name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

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

inline Labels with(Labels labels, std::string name, std::string value) {
  labels.emplace_back(std::move(name), std::move(value));
  return labels;
}

} // namespace neutracer
