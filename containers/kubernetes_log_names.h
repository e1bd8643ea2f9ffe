// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the kubelet's log file names say about containers. Pure: no I/O.
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "containers/container_identity.h"

namespace neutracer {

// /var/log/containers/<pod>_<namespace>_<container>-<64-hex id>.log
struct ContainerLogName {
  std::string pod;
  std::string namespace_name;
  std::string container; // the container's name in the pod spec
  std::string container_id;
  bool operator==(const ContainerLogName &) const = default;
};
std::optional<ContainerLogName> parse_container_log_name(std::string_view file_name);

// /var/log/pods/<namespace>_<pod>_<uid>
struct PodLogDirectory {
  std::string namespace_name;
  std::string pod;
  std::string uid;
  bool operator==(const PodLogDirectory &) const = default;
};
std::optional<PodLogDirectory> parse_pod_log_directory(std::string_view directory_name);

// A container's Kubernetes names; each empty when unknown.
struct PodNames {
  std::string namespace_name;
  std::string pod;
  std::string container;
  bool operator==(const PodNames &) const = default;
};

// One listing of both log directories, for lookups by container id and pod uid.
class PodNameIndex {
public:
  void add(ContainerLogName name);
  void add(PodLogDirectory directory);

  // By container id; failing that, the pod's namespace and name by pod uid (container name
  // unknown: a pod directory does not say which container has which id).
  PodNames find(const ContainerIdentity &identity) const;
  bool knows_container(const std::string &id) const { return by_container_id_.contains(id); }

private:
  std::map<std::string, ContainerLogName> by_container_id_;
  std::map<std::string, PodLogDirectory> by_pod_uid_;
};

} // namespace neutracer
