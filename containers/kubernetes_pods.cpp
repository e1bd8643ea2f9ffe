// SPDX-License-Identifier: Apache-2.0
#include "containers/kubernetes_pods.h"

#include <algorithm>
#include <spdlog/spdlog.h>
#include <system_error>

namespace neutracer {
namespace {

// Calls `visit` with each entry's name; never throws. Entries are not followed or stat'ed:
// /var/log/containers holds symlinks whose targets only root may read.
template <typename Visit> void for_each_name(const std::filesystem::path &directory, Visit visit) {
  std::error_code error;
  std::filesystem::directory_iterator it(directory, error);
  if (error) {
    spdlog::debug("kubernetes: not listing {}: {}", directory.string(), error.message());
    return;
  }
  for (const std::filesystem::directory_iterator end; it != end; it.increment(error)) {
    visit(it->path().filename().string());
    if (error)
      break;
  }
  if (error)
    spdlog::debug("kubernetes: listing {} stopped: {}", directory.string(), error.message());
}

} // namespace

PodNameIndex read_pod_name_index(const std::filesystem::path &log_dir) {
  PodNameIndex index;
  for_each_name(log_dir / "containers", [&](const std::string &name) {
    if (auto parsed = parse_container_log_name(name))
      index.add(std::move(*parsed));
  });
  for_each_name(log_dir / "pods", [&](const std::string &name) {
    if (auto parsed = parse_pod_log_directory(name))
      index.add(std::move(*parsed));
  });
  return index;
}

void KubernetesPodNames::resolve_containers(std::span<ContainerInfo *const> containers) {
  if (log_dir_.empty())
    return;
  const bool unknown_container = std::any_of(containers.begin(), containers.end(), [&](auto *c) {
    return !c->identity.id.empty() && !index_.knows_container(c->identity.id);
  });
  if (unknown_container) {
    index_ = read_pod_name_index(log_dir_);
    ++listings_;
  }
  for (auto *container : containers)
    container->pod = index_.find(container->identity);
}

} // namespace neutracer
