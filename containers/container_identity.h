// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which container (and Slurm job) a process runs in, read from its /proc/<pid>/cgroup text.
// Pure: no I/O.
#include <string>
#include <string_view>

namespace neutracer {

struct ContainerIdentity {
  std::string id;      // 64 hex digits; empty outside a container
  std::string runtime; // docker, containerd, cri-o, podman, or "" when the path does not say
  std::string pod_uid; // Kubernetes pod uid with dashes, or ""
  // The Slurm job id (decimal digits) whose cgroup holds the process, in or outside a
  // container; "" outside Slurm's cgroups.
  std::string slurm_job = {};
  bool operator==(const ContainerIdentity &) const = default;
};

// 64 lower-case hex digits, as docker, containerd, CRI-O and podman name containers.
bool is_container_id(std::string_view text);

// A Kubernetes pod uid: a UUID with dashes, or 32 hex digits (static pods' manifest hash).
bool is_pod_uid(std::string_view text);

// Understands cgroup v1 (one line per hierarchy) and v2 ("0::/path") files of docker (cgroupfs
// and systemd drivers), containerd (Kubernetes with either driver, nerdctl), CRI-O and podman
// (rootful and rootless). conmon's scopes are not containers. Nested containers give the
// innermost. Anything else with a 64-hex path component gives the id alone.
// slurm_job comes from slurm_job_from_cgroup.
ContainerIdentity container_identity_from_cgroup(std::string_view cgroup_text);

// The id of Slurm's job_<id> cgroup on the path, "" when there is none: cgroup v2
// (.../system.slice/[<node>_]slurmstepd.scope/job_<id>/step_<step>/...) and cgroup v1
// (.../slurm[_<node>]/uid_<uid>/job_<id>/step_<step>/...). A job_<id> directory elsewhere is
// not Slurm's. Ids are 1 to 10 decimal digits (Slurm's are 32-bit); the innermost job wins.
std::string slurm_job_from_cgroup(std::string_view cgroup_text);

} // namespace neutracer
