// SPDX-License-Identifier: Apache-2.0
#include "containers/container_identity.h"

#include <array>
#include <cctype>
#include <optional>
#include <vector>

namespace neutracer {
namespace {

constexpr std::size_t kIdLength = 64;

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

bool all_hex(std::string_view text) {
  for (const char c : text)
    if (!is_hex(c))
      return false;
  return true;
}

struct NamedRuntime {
  std::string_view name;
  std::string_view runtime;
};

// Per-container scope (systemd driver) or directory (cgroupfs driver) name prefixes.
constexpr std::array kContainerPrefixes = {
    NamedRuntime{"docker-", "docker"},      NamedRuntime{"cri-containerd-", "containerd"},
    NamedRuntime{"crio-", "cri-o"},         NamedRuntime{"libpod-", "podman"},
    NamedRuntime{"nerdctl-", "containerd"},
};

// conmon, the monitor that CRI-O and podman run beside each container, gets a scope named
// after the container: the process in it is not the container's.
constexpr std::array<std::string_view, 2> kConmonPrefixes = {"crio-conmon-", "libpod-conmon-"};

// Parents of a bare 64-hex directory under the cgroupfs drivers; "default" is containerd's
// default namespace (nerdctl, ctr). Under a Kubernetes pod<uid> the runtime is not named.
constexpr std::array kBareIdParents = {
    NamedRuntime{"docker", "docker"},
    NamedRuntime{"default", "containerd"},
    NamedRuntime{"libpod_parent", "podman"},
};

enum class ComponentKind { other, container, conmon };

struct ComponentMatch {
  ComponentKind kind = ComponentKind::other;
  std::string_view id;
  std::string_view runtime;
};

std::string_view runtime_of_prefix(std::string_view prefix_with_dash) {
  for (const auto &[prefix, runtime] : kContainerPrefixes)
    if (prefix == prefix_with_dash)
      return runtime;
  return {};
}

// The last run of exactly 64 hex digits not glued to other letters or digits.
std::string_view bounded_id_in(std::string_view text) {
  std::string_view found;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!is_hex(text[i])) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && is_hex(text[end]))
      ++end;
    const bool bounded_before = i == 0 || !std::isalnum(static_cast<unsigned char>(text[i - 1]));
    const bool bounded_after =
        end == text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
    if (end - i == kIdLength && bounded_before && bounded_after)
      found = text.substr(i, kIdLength);
    i = end;
  }
  return found;
}

ComponentMatch classify(std::string_view component, std::string_view parent) {
  // containerd's systemd-style cgroupsPath "slice:prefix:id" left as one directory name
  // (kind and other nodes where systemd does not create the scope).
  if (const auto last_colon = component.rfind(':'); last_colon != std::string_view::npos) {
    const auto id = component.substr(last_colon + 1);
    const auto head = component.substr(0, last_colon);
    const auto prefix_colon = head.rfind(':');
    if (prefix_colon == std::string_view::npos || !is_container_id(id))
      return {};
    const std::string prefix = std::string(head.substr(prefix_colon + 1)) + "-";
    return {ComponentKind::container, id, runtime_of_prefix(prefix)};
  }
  std::string_view name = component;
  if (name.ends_with(".scope"))
    name.remove_suffix(std::string_view(".scope").size());
  for (const auto conmon : kConmonPrefixes)
    if (name.starts_with(conmon))
      return {ComponentKind::conmon, {}, {}};
  for (const auto &[prefix, runtime] : kContainerPrefixes)
    if (name.starts_with(prefix) && is_container_id(name.substr(prefix.size())))
      return {ComponentKind::container, name.substr(prefix.size()), runtime};
  if (is_container_id(component)) {
    for (const auto &[known_parent, runtime] : kBareIdParents)
      if (parent == known_parent)
        return {ComponentKind::container, component, runtime};
    return {ComponentKind::container, component, {}};
  }
  // Unknown layouts (other orchestrators, custom cgroup parents): the id without a runtime.
  if (const auto id = bounded_id_in(component); !id.empty())
    return {ComponentKind::container, id, {}};
  return {};
}

// Kubernetes pod cgroups: "pod<uid>" (cgroupfs driver) or "kubepods[-<qos>]-pod<uid>.slice"
// (systemd driver, with the uid's dashes turned into underscores).
std::string pod_uid_of(std::string_view component) {
  // The "slice:prefix:id" form carries the pod slice before its first colon.
  component = component.substr(0, component.find(':'));
  std::string_view candidate;
  constexpr std::string_view kSlice = ".slice";
  if (component.starts_with("kubepods") && component.ends_with(kSlice)) {
    const auto pod = component.rfind("-pod");
    if (pod == std::string_view::npos)
      return {};
    candidate = component.substr(pod + 4, component.size() - kSlice.size() - (pod + 4));
  } else if (component.starts_with("pod")) {
    candidate = component.substr(3);
  } else {
    return {};
  }
  std::string uid(candidate);
  for (auto &c : uid)
    if (c == '_')
      c = '-';
  return is_pod_uid(uid) ? uid : std::string();
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  while (!text.empty()) {
    const auto end = text.find(separator);
    const auto part = text.substr(0, end);
    if (!part.empty())
      parts.push_back(part);
    if (end == std::string_view::npos)
      break;
    text.remove_prefix(end + 1);
  }
  return parts;
}

std::optional<ContainerIdentity> identity_in_path(std::string_view path) {
  const auto components = split(path, '/');
  // From the leaf up: the innermost container of nested ones comes first.
  for (std::size_t i = components.size(); i-- > 0;) {
    const auto match = classify(components[i], i > 0 ? components[i - 1] : std::string_view());
    if (match.kind == ComponentKind::conmon)
      return std::nullopt;
    if (match.kind != ComponentKind::container)
      continue;
    ContainerIdentity identity{std::string(match.id), std::string(match.runtime), {}};
    for (std::size_t j = 0; j <= i; ++j)
      if (auto uid = pod_uid_of(components[j]); !uid.empty())
        identity.pod_uid = std::move(uid);
    return identity;
  }
  return std::nullopt;
}

bool all_digits(std::string_view text) {
  for (const char c : text)
    if (c < '0' || c > '9')
      return false;
  return true;
}

// "job_<digits>" gives the digits, anything else "".
std::string_view slurm_job_id_of(std::string_view component) {
  constexpr std::string_view kPrefix = "job_";
  constexpr std::size_t kMaxDigits = 10; // 4294967295
  if (!component.starts_with(kPrefix))
    return {};
  const auto id = component.substr(kPrefix.size());
  return !id.empty() && id.size() <= kMaxDigits && all_digits(id) ? id : std::string_view();
}

// cgroup v2: slurmd's scope, "slurmstepd.scope" or "<node>_slurmstepd.scope" (slurmd built
// with --enable-multiple-slurmd).
bool is_slurmstepd_scope(std::string_view component) {
  constexpr std::string_view kScope = "slurmstepd.scope";
  return component == kScope ||
         (component.size() > kScope.size() + 1 && component.ends_with(kScope) &&
          component[component.size() - kScope.size() - 1] == '_');
}

// cgroup v1: "slurm" (or "slurm_<node>") then "uid_<uid>" above the job.
bool is_slurm_v1_parents(std::string_view root, std::string_view user) {
  const bool slurm_root = root == "slurm" || (root.starts_with("slurm_") && root.size() > 6);
  return slurm_root && user.starts_with("uid_") && user.size() > 4 && all_digits(user.substr(4));
}

std::string_view slurm_job_in_path(std::string_view path) {
  const auto components = split(path, '/');
  for (std::size_t i = components.size(); i-- > 0;) {
    const auto id = slurm_job_id_of(components[i]);
    if (id.empty())
      continue;
    if (i >= 1 && is_slurmstepd_scope(components[i - 1]))
      return id;
    if (i >= 2 && is_slurm_v1_parents(components[i - 2], components[i - 1]))
      return id;
  }
  return {};
}

// Lines are "hierarchy-id:controllers:path"; the path itself may hold colons. Calls `visit`
// with each path until it returns true.
template <typename Visit> void for_each_cgroup_path(std::string_view cgroup_text, Visit visit) {
  for (auto line : split(cgroup_text, '\n')) {
    if (line.ends_with('\r'))
      line.remove_suffix(1);
    const auto first = line.find(':');
    const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos)
      continue;
    if (visit(line.substr(second + 1)))
      return;
  }
}

} // namespace

bool is_container_id(std::string_view text) { return text.size() == kIdLength && all_hex(text); }

bool is_pod_uid(std::string_view text) {
  if (text.size() == 32)
    return all_hex(text);
  if (text.size() != 36)
    return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool dash_here = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_here ? text[i] != '-' : !is_hex(text[i]))
      return false;
  }
  return true;
}

ContainerIdentity container_identity_from_cgroup(std::string_view cgroup_text) {
  ContainerIdentity identity;
  // v1 hierarchies all name the same container; in hybrid mode "0::/" may stay at the root.
  for_each_cgroup_path(cgroup_text, [&](std::string_view path) {
    auto found = identity_in_path(path);
    if (found)
      identity = std::move(*found);
    return found.has_value();
  });
  identity.slurm_job = slurm_job_from_cgroup(cgroup_text);
  return identity;
}

std::string slurm_job_from_cgroup(std::string_view cgroup_text) {
  // Under cgroup v1 Slurm's task plugin creates the job in some hierarchies only (freezer,
  // cpuset, memory, devices): the others show slurmd's service.
  std::string_view job;
  for_each_cgroup_path(cgroup_text, [&](std::string_view path) {
    job = slurm_job_in_path(path);
    return !job.empty();
  });
  return std::string(job);
}

} // namespace neutracer
