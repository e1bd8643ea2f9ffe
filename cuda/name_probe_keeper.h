// SPDX-License-Identifier: Apache-2.0
#pragma once
// Exact counting probes launches system-wide, from a process's start. The call that names a
// launched function (cuKernelGetFunction) is probed per process instead: PyTorch makes it
// before most launches (47 times per CNN training step), and each call costs two traps (entry
// and return) for an answer the daemon already has. Its probes are attached while a process
// may still launch a kernel it has no name for: from when it is first seen until it has
// launched and every launch is named, and again whenever an unnamed launch shows up.
#include <functional>
#include <map>
#include <vector>

#include "cuda/cuda_discovery.h"
#include "cuda/launch_probe_control.h"

namespace neutracer {

class NameProbeKeeper {
public:
  explicit NameProbeKeeper(LaunchProbeControl &probes) : probes_(probes) {}

  // After a scan. `wanted(pid)`: the process may still launch a kernel it has no name for.
  // A process absent from `processes` for which `unknown` is true (the scan could not read it)
  // keeps its probes; the others absent are forgotten.
  void update(const std::vector<CudaProcess> &processes, const std::function<bool(int)> &wanted,
              const std::function<bool(int)> &unknown = {});
  // A process seen before its first scan (its first probed call): probed now, so that the
  // names of its first launches are seen.
  void track(const CudaProcess &process);
  bool tracks(int pid) const { return processes_.contains(pid); }
  bool attached(int pid) const;

private:
  struct Tracked {
    std::uint64_t start_ticks = 0;
    std::vector<LibraryId> libraries;
    bool attached = false;
    bool warned = false;     // an attach failure is logged once per process
    bool drop_calls = false; // detached: drop the calls whose return probe went with them
  };
  void attach(int pid, Tracked &process);
  void detach(int pid, Tracked &process);

  LaunchProbeControl &probes_;
  std::map<int, Tracked> processes_;
};

} // namespace neutracer
