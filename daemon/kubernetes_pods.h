#pragma once
// Kubernetes names for traced processes, from the kubelet's log directories. Reading a
// directory listing needs no privileges and no API server, token or gRPC client.
#include <cstdint>
#include <filesystem>
#include <vector>

#include "daemon/cuda_discovery.h"
#include "daemon/kubernetes_log_names.h"

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
  void resolve(std::vector<CudaProcess> &processes);

  std::uint64_t listings() const { return listings_; }

private:
  std::filesystem::path log_dir_;
  PodNameIndex index_;
  std::uint64_t listings_ = 0;
};

} // namespace neutracer
