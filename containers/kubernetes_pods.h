// SPDX-License-Identifier: Apache-2.0
#pragma once
// Kubernetes names for traced processes, from the kubelet's log directories. Reading a
// directory listing needs no privileges and no API server, token or gRPC client.
#include <cstdint>
#include <filesystem>
#include <iterator>
#include <span>
#include <vector>

#include "containers/container_info.h"
#include "containers/kubernetes_log_names.h"

namespace neutracer {

// Lists <log_dir>/containers and <log_dir>/pods. A missing or unreadable directory (a node
// without Kubernetes) contributes nothing; names that are not the kubelet's are skipped.
PodNameIndex read_pod_name_index(const std::filesystem::path &log_dir);

class KubernetesPodNames {
public:
  // An empty log_dir disables the lookup.
  explicit KubernetesPodNames(std::filesystem::path log_dir) : log_dir_(std::move(log_dir)) {}

  // Sets each process's pod names. Lists the directories again only when a process's
  // container is not in the last listing, so a steady node costs no reads.
  // `processes`: any range of objects with a ContainerInfo member named `container`.
  template <typename Processes> void resolve(Processes &processes) {
    resolve_containers(containers_of(processes));
  }
  void resolve_containers(std::span<ContainerInfo *const> containers);

  std::uint64_t listings() const { return listings_; }

private:
  std::filesystem::path log_dir_;
  PodNameIndex index_;
  std::uint64_t listings_ = 0;
};

} // namespace neutracer
