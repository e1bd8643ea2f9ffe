// SPDX-License-Identifier: Apache-2.0
#include "cuda/cuda_discovery.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/proc_parsers.h"
#include "containers/container_identity.h"

namespace neutracer {

std::optional<std::uint64_t> process_start_ticks(const ProcFs &procfs, int pid) {
  const auto text = procfs.read(pid, "stat");
  if (!text)
    return std::nullopt;
  const auto stat = parse_proc_stat(*text);
  if (!stat)
    return std::nullopt;
  return stat->start_ticks;
}

namespace {

// One process's libcuda (and libnccl) mappings and identity; nullopt when it maps no libcuda,
// vanished, or its maps cannot be read (`unreadable`).
std::optional<CudaProcess> read_cuda_process(const ProcFs &procfs, int pid,
                                             std::vector<MapsEntry> &cuda_maps, bool &unreadable) {
  const bool readable = procfs.for_each_line(pid, "maps", [&](std::string_view line) {
    // Cheap substring test first: maps files of large programs have many thousand lines.
    if (line.find("libcuda.so") == std::string_view::npos &&
        line.find("libnccl.so") == std::string_view::npos)
      return;
    auto entry = parse_maps_line(line);
    if (entry && (is_cuda_driver_library(entry->path) || is_nccl_library(entry->path)))
      cuda_maps.push_back(std::move(*entry));
  });
  unreadable = !readable;
  // NCCL alone (no driver mapped yet) is not a CUDA process.
  if (!readable || std::none_of(cuda_maps.begin(), cuda_maps.end(), [](const MapsEntry &entry) {
        return is_cuda_driver_library(entry.path);
      }))
    return std::nullopt;
  // Vanished between maps and stat: skip, the next scan settles it.
  const auto stat_text = procfs.read(pid, "stat");
  const auto stat = stat_text ? parse_proc_stat(*stat_text) : std::nullopt;
  if (!stat)
    return std::nullopt;
  CudaProcess process;
  process.id = {pid, stat->start_ticks};
  process.comm = stat->comm;
  process.exe = procfs.read_link(pid, "exe").value_or("");
  process.container.identity =
      container_identity_from_cgroup(procfs.read(pid, "cgroup").value_or(""));
  return process;
}

} // namespace

bool DiscoveryResult::unknown(int pid) const {
  return (pids_unlisted && !seen_gone(pid)) ||
         std::binary_search(fd_limited.begin(), fd_limited.end(), pid);
}

bool DiscoveryResult::seen_gone(int pid) const {
  return std::binary_search(gone.begin(), gone.end(), pid);
}

std::optional<CudaProcess> discover_cuda_process(const ProcFs &procfs, int pid) {
  std::vector<MapsEntry> cuda_maps;
  bool unreadable = false;
  auto process = read_cuda_process(procfs, pid, cuda_maps, unreadable);
  if (process)
    for (const auto &entry : cuda_maps) {
      const LibraryId id{entry.dev, entry.inode};
      if (std::find(process->libraries.begin(), process->libraries.end(), id) ==
          process->libraries.end())
        process->libraries.push_back(id);
    }
  return process;
}

DiscoveryResult discover_cuda_processes(const ProcFs &procfs, const std::vector<int> &traced) {
  DiscoveryResult result;
  std::map<LibraryId, CudaLibrary> libraries;
  std::set<LibraryId> reached_through_mapping; // libraries whose open path is a map_files entry
  const FdLimitWatch listing(procfs);
  auto pids = procfs.list_pids();
  result.pids_unlisted = listing.hit();
  // Out of descriptors, exits are still seen: otherwise the links of processes that exited
  // are never closed and the descriptors never come back.
  if (result.pids_unlisted) {
    for (const int pid : traced)
      if (procfs.gone(pid))
        result.gone.push_back(pid);
    std::sort(result.gone.begin(), result.gone.end());
  }
  std::sort(pids.begin(), pids.end());
  for (const int pid : pids) {
    std::vector<MapsEntry> cuda_maps;
    bool unreadable = false;
    const FdLimitWatch reading(procfs);
    auto process = read_cuda_process(procfs, pid, cuda_maps, unreadable);
    // Any of its files unread for lack of descriptors (a container id lost with its cgroup
    // file would relabel it too): the process is left as the last scan saw it.
    if (reading.hit()) {
      result.fd_limited.push_back(pid);
      continue;
    }
    if (unreadable)
      ++result.unreadable;
    if (!process)
      continue;
    for (const auto &entry : cuda_maps) {
      const LibraryId id{entry.dev, entry.inode};
      if (std::find(process->libraries.begin(), process->libraries.end(), id) !=
          process->libraries.end())
        continue;
      process->libraries.push_back(id);
      // A deleted file (an upgrade renamed a new one over it) is reached through the mapping
      // itself: its path names the new file now. A live path, where one exists, is preferred.
      const bool live_path_for_a_deleted_one =
          reached_through_mapping.contains(id) && !entry.deleted;
      if (libraries.contains(id) && !live_path_for_a_deleted_one)
        continue;
      if (entry.deleted)
        reached_through_mapping.insert(id);
      else
        reached_through_mapping.erase(id);
      libraries.insert_or_assign(
          id,
          CudaLibrary{id, entry.path,
                      entry.deleted ? procfs.mapped_file_path(pid, entry.start, entry.end).string()
                                    : procfs.path_in_process_root(pid, entry.path).string(),
                      is_nccl_library(entry.path) ? LibraryKind::nccl : LibraryKind::cuda_driver});
    }
    result.processes.push_back(std::move(*process));
  }
  for (auto &[id, library] : libraries)
    result.libraries.push_back(std::move(library));
  return result;
}

} // namespace neutracer
