// SPDX-License-Identifier: Apache-2.0
#pragma once
// How many file descriptors the daemon needs for what it traces (docs/operations.md, "Open file
// limit").
#include <cstdint>

#include "common/descriptor_reserve.h"

namespace neutracer {

struct FdBudgetInput {
  std::uint64_t processes = 0;            // traced CUDA processes
  std::uint64_t libraries = 0;            // distinct driver files attached
  std::uint64_t system_wide_probes = 0;   // over all files (the tracer's probe count)
  bool per_process_launch_probes = false; // per-process launch or naming links
  std::uint64_t max_connections = 0;      // web.max_connections
};

// Descriptors held whatever is traced: BPF programs, maps and links of the CUDA and OS tracers,
// the ring buffer's epoll, the journal, standard streams: 68 measured without NVML. The rest is
// for NVML's device files and the few files a scan opens at once.
inline constexpr std::uint64_t kFixedDescriptors = 128;
// civetweb holds up to web.max_connections connections, queues up to 20 accepted ones, and
// listens on one socket.
inline constexpr std::uint64_t kHttpDescriptorsBeyondConnections = 21;
// A uprobe is a perf event plus the BPF link that ties the program to it. With uprobe_multi links
// (Linux 6.6) a driver file's system-wide probes hold 8 descriptors in all: this is then an
// upper bound.
inline constexpr std::uint64_t kDescriptorsPerProbe = 2;
// Each traced process's image (its maps file, held to notice an exec).
inline constexpr std::uint64_t kDescriptorsPerProcess = 1;
// Adaptive mode: one uprobe_multi link per per-process program (two launch programs, the
// sampled calls' entry and exit) for each driver file the process maps.
inline constexpr std::uint64_t kLaunchLinksPerProcessAndLibrary = 4;

constexpr std::uint64_t descriptors_needed(const FdBudgetInput &in) {
  const std::uint64_t per_process =
      kDescriptorsPerProcess +
      (in.per_process_launch_probes ? kLaunchLinksPerProcessAndLibrary : 0);
  // Adaptive mode keeps each driver file open (O_PATH) to attach later processes through it.
  const std::uint64_t per_library = in.per_process_launch_probes ? 1 : 0;
  // kReservedDescriptors: held free for the scan and /metrics while probes are attached.
  return kFixedDescriptors + kReservedDescriptors + in.max_connections +
         kHttpDescriptorsBeyondConnections + kDescriptorsPerProbe * in.system_wide_probes +
         per_library * in.libraries + per_process * in.processes;
}

} // namespace neutracer
