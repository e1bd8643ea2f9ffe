// SPDX-License-Identifier: Apache-2.0
#pragma once
// Docker's names for containers, from the config.v2.json that dockerd keeps per container under
// its data root. Kubernetes names come from the kubelet's log names instead
// (kubernetes_pods.h); other runtimes' names are not looked up.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "containers/container_info.h"

namespace neutracer {

// One container's name, or why there is none.
struct DockerName {
  std::string name;  // without Docker's leading '/'; empty when error is set
  std::string error; // empty on success
  bool operator==(const DockerName &) const = default;
};

// The most of a config.v2.json the daemon reads: a few KiB usually, more with a large
// environment or many labels. A bigger file is refused, not truncated.
inline constexpr std::size_t kMaxDockerConfigBytes = 1 << 20;

// Pure. The top-level "Name" of a config.v2.json document, given that its top-level "ID" is
// `id`. A name follows Docker's rule ([a-zA-Z0-9][a-zA-Z0-9_.-]+, at most 255 characters,
// stored with a leading '/'). Everything else in the document (environment, labels, mounts) is
// skipped, not kept. Any other input gives an error that says what was wrong.
DockerName parse_docker_config_name(std::string_view config_json, std::string_view id);

// Reads and parses <containers_dir>/<id>/config.v2.json: a regular file, not a link, at most
// kMaxDockerConfigBytes. `id` must satisfy is_container_id. Never throws.
struct DockerNameRead {
  DockerName result;
  int open_errno = 0; // errno when the file could not be opened (ENOENT: not Docker's)
};
DockerNameRead read_docker_container_name(const std::filesystem::path &containers_dir,
                                          const std::string &id);

class DockerContainerNames {
public:
  // Docker's default data root. An empty path disables the lookup. A daemon with another
  // data-root, rootless Docker (under the user's home) and other runtimes give no names.
  static constexpr const char *kDefaultContainersDir = "/var/lib/docker/containers";
  explicit DockerContainerNames(std::filesystem::path containers_dir = kDefaultContainersDir)
      : containers_dir_(std::move(containers_dir)) {}

  // Sets runtime_name of each container that may be Docker's (the cgroup path says docker, or
  // names no runtime and no pod). Each container's file is read once while it has traced
  // processes: the names of the containers passed last time are kept, those of others dropped.
  // A file that is there but unusable is logged once as a warning, with the reason.
  // `processes`: any range of objects with a ContainerInfo member named `container`.
  template <typename Processes> void resolve(Processes &processes) {
    resolve_containers(containers_of(processes));
  }
  void resolve_containers(std::span<ContainerInfo *const> containers);

  std::uint64_t reads() const { return reads_; }
  std::size_t cached() const { return names_.size(); }

private:
  std::filesystem::path containers_dir_;
  std::map<std::string, std::string> names_; // by container id; "" when it has none
  std::uint64_t reads_ = 0;
};

} // namespace neutracer
