// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the daemon knows about a process's container: carried from discovery to labels and JSON.
#include <string>
#include <vector>

#include "containers/container_identity.h"
#include "containers/kubernetes_log_names.h"

namespace neutracer {

struct ContainerInfo {
  ContainerIdentity identity; // from /proc/<pid>/cgroup
  PodNames pod;               // from the kubelet's log directories; empty outside Kubernetes
  // The runtime's own name for the container (Docker's, without the leading '/'); empty when
  // the runtime does not tell or in Kubernetes, where pod.container names it.
  std::string runtime_name = {};

  // The container's name as cAdvisor and dcgm-exporter label it: the pod spec's name in
  // Kubernetes, else the runtime's; "" when unknown.
  const std::string &name() const { return pod.container.empty() ? runtime_name : pod.container; }

  bool operator==(const ContainerInfo &) const = default;
};

// The `container` member of each of `processes` (any range of objects that have one), for the
// name resolvers, which fill in what they learn.
template <typename Processes> std::vector<ContainerInfo *> containers_of(Processes &processes) {
  std::vector<ContainerInfo *> containers;
  for (auto &process : processes)
    containers.push_back(&process.container);
  return containers;
}

} // namespace neutracer
