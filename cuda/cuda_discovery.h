// SPDX-License-Identifier: Apache-2.0
#pragma once
// Finds the processes that map the CUDA driver library and the distinct library files they map:
// the driver, and NCCL where they use it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/process_id.h"
#include "common/procfs.h"
#include "containers/container_info.h"

namespace neutracer {

struct LibraryId {
  std::uint64_t dev = 0;
  std::uint64_t inode = 0;
  auto operator<=>(const LibraryId &) const = default;
};

// What a probed file is: the CUDA driver, or NCCL (probed for collectives, docs/nccl.md).
enum class LibraryKind { cuda_driver, nccl };

struct CudaLibrary {
  LibraryId id;
  std::string path;      // as the first process seen maps it
  std::string open_path; // the same file, reachable from the daemon (through /proc/<pid>/root)
  LibraryKind kind = LibraryKind::cuda_driver;
};

struct CudaProcess {
  ProcessId id;
  std::string comm;
  std::string exe;
  ContainerInfo container; // id empty outside a container; pod names filled by the main loop
  std::vector<LibraryId> libraries;
};

struct DiscoveryResult {
  std::vector<CudaProcess> processes; // sorted by pid
  std::vector<CudaLibrary> libraries; // distinct by (dev, inode)
  std::uint64_t unreadable = 0;       // processes whose maps we could not read (hidepid, vanished)
  // Processes not read because the daemon ran out of file descriptors (EMFILE/ENFILE): whether
  // they still run, and what they map, is unknown this scan, which is not an exit. Sorted.
  std::vector<int> fd_limited;
  bool pids_unlisted = false; // /proc itself could not be opened for the same reason
  // Then: the traced processes (as passed to discovery) whose /proc folder is missing, which
  // needs no descriptor to see: exited, whatever else is unknown. Sorted.
  std::vector<int> gone;
  bool hit_fd_limit() const { return pids_unlisted || !fd_limited.empty(); }
  // Whether this scan says nothing about `pid` (it read neither its presence nor its absence).
  bool unknown(int pid) const;
  // Whether `pid` is in `gone`: exited, though nothing of it could be read.
  bool seen_gone(int pid) const;
};

// `traced`: the processes traced so far, checked one by one when /proc cannot be listed.
DiscoveryResult discover_cuda_processes(const ProcFs &procfs, const std::vector<int> &traced = {});
// The same for one process (its libraries' ids only); nullopt when it maps no libcuda or is gone.
std::optional<CudaProcess> discover_cuda_process(const ProcFs &procfs, int pid);

// Start time of a live process, nullopt once it is gone.
std::optional<std::uint64_t> process_start_ticks(const ProcFs &procfs, int pid);

} // namespace neutracer
