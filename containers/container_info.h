#pragma once
// What the daemon knows about a process's container: carried from discovery to labels and JSON.
#include "containers/container_identity.h"
#include "containers/kubernetes_log_names.h"

namespace neutracer {

struct ContainerInfo {
  ContainerIdentity identity; // from /proc/<pid>/cgroup
  PodNames pod;               // from the kubelet's log directories; empty outside Kubernetes
  bool operator==(const ContainerInfo &) const = default;
};

} // namespace neutracer
