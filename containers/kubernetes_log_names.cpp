// SPDX-License-Identifier: Apache-2.0
#include "containers/kubernetes_log_names.h"

#include <array>

namespace neutracer {
namespace {

// Kubernetes names never contain '_', which is why the kubelet uses it as the separator.
constexpr char kSeparator = '_';
constexpr std::size_t kMaxLabelLength = 63;      // namespaces, container names (DNS-1123 label)
constexpr std::size_t kMaxSubdomainLength = 253; // pod names (DNS-1123 subdomain)

bool is_name_char(char c, bool allow_dots) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (allow_dots && c == '.');
}

bool is_kubernetes_name(std::string_view name, bool allow_dots, std::size_t max_length) {
  if (name.empty() || name.size() > max_length)
    return false;
  for (const char c : name)
    if (!is_name_char(c, allow_dots))
      return false;
  return true;
}

bool is_label_name(std::string_view name) {
  return is_kubernetes_name(name, false, kMaxLabelLength);
}
bool is_pod_name(std::string_view name) {
  return is_kubernetes_name(name, true, kMaxSubdomainLength);
}

// Exactly three non-empty parts separated by '_', or nullopt.
std::optional<std::array<std::string_view, 3>> three_parts(std::string_view text) {
  std::array<std::string_view, 3> parts;
  for (std::size_t i = 0; i < 2; ++i) {
    const auto end = text.find(kSeparator);
    if (end == std::string_view::npos)
      return std::nullopt;
    parts[i] = text.substr(0, end);
    text.remove_prefix(end + 1);
  }
  if (text.find(kSeparator) != std::string_view::npos)
    return std::nullopt;
  parts[2] = text;
  return parts;
}

} // namespace

std::optional<ContainerLogName> parse_container_log_name(std::string_view file_name) {
  constexpr std::string_view kSuffix = ".log";
  if (!file_name.ends_with(kSuffix))
    return std::nullopt;
  file_name.remove_suffix(kSuffix.size());
  const auto parts = three_parts(file_name);
  if (!parts)
    return std::nullopt;
  const auto [pod, namespace_name, container_and_id] = *parts;
  // "<container>-<id>": the id has a fixed length, the container name may hold dashes.
  constexpr std::size_t kIdWithDash = 65;
  if (container_and_id.size() <= kIdWithDash ||
      container_and_id[container_and_id.size() - kIdWithDash] != '-')
    return std::nullopt;
  const auto container = container_and_id.substr(0, container_and_id.size() - kIdWithDash);
  const auto id = container_and_id.substr(container_and_id.size() - kIdWithDash + 1);
  if (!is_pod_name(pod) || !is_label_name(namespace_name) || !is_label_name(container) ||
      !is_container_id(id))
    return std::nullopt;
  return ContainerLogName{std::string(pod), std::string(namespace_name), std::string(container),
                          std::string(id)};
}

std::optional<PodLogDirectory> parse_pod_log_directory(std::string_view directory_name) {
  const auto parts = three_parts(directory_name);
  if (!parts)
    return std::nullopt;
  const auto [namespace_name, pod, uid] = *parts;
  if (!is_label_name(namespace_name) || !is_pod_name(pod) || !is_pod_uid(uid))
    return std::nullopt;
  return PodLogDirectory{std::string(namespace_name), std::string(pod), std::string(uid)};
}

void PodNameIndex::add(ContainerLogName name) {
  auto id = name.container_id;
  by_container_id_.insert_or_assign(std::move(id), std::move(name));
}

void PodNameIndex::add(PodLogDirectory directory) {
  auto uid = directory.uid;
  by_pod_uid_.insert_or_assign(std::move(uid), std::move(directory));
}

PodNames PodNameIndex::find(const ContainerIdentity &identity) const {
  if (identity.id.empty())
    return {};
  if (const auto found = by_container_id_.find(identity.id); found != by_container_id_.end())
    return {found->second.namespace_name, found->second.pod, found->second.container};
  if (identity.pod_uid.empty())
    return {};
  if (const auto found = by_pod_uid_.find(identity.pod_uid); found != by_pod_uid_.end())
    return {found->second.namespace_name, found->second.pod, {}};
  return {};
}

} // namespace neutracer
