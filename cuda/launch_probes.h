// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which launch probes each process gets. With every process counted exactly the launch probes
// are system-wide and only cuKernelGetFunction goes per process, while a process may launch a
// kernel it has no name for (NameProbeKeeper). When some process is sampled or not counted,
// every process gets its own launch probes, gated per window (LaunchScheduler).
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/procfs.h"
#include "cuda/cuda_discovery.h"
#include "cuda/cuda_state.h"
#include "cuda/cuda_tracing.h"
#include "cuda/launch_sampling.h"
#include "cuda/launch_scheduler.h"
#include "cuda/name_probe_keeper.h"

namespace neutracer {

struct LaunchProbeSettings {
  LaunchCounting mode = LaunchCounting::exact;
  std::vector<LaunchRule> rules; // per-process modes by comm pattern
  LaunchSamplingSettings sampling;
  // Whether every process is counted exactly: the launch probes can then attach system-wide,
  // from a process's start; otherwise they go per process, gated per window.
  bool all_exact() const;
};

class LaunchProbes {
public:
  // `state` tells which processes still lack kernel names; `gpu_saturated(pid)` whether every
  // GPU the process uses was busy (a sampled window then stays closed).
  LaunchProbes(const LaunchProbeSettings &settings, CudaTracing &tracer, const ProcFs &procfs,
               const CudaState &state, std::function<bool(int)> gpu_saturated);

  // After discovery: probes for new processes, none for gone ones.
  void update(const DiscoveryResult &discovery);
  // A probed call of `tgid` before its first scan: its probes are attached now.
  void seen(std::uint32_t tgid);
  // Opens and closes sampled windows that are due; the time by which to call again
  // (CLOCK_MONOTONIC ns, UINT64_MAX: none due).
  std::uint64_t tick();
  // This scan's launch counts: raw in-kernel counts, or the scheduler's scaled totals.
  std::vector<LaunchCount> read();
  // The in-kernel counters of `pid` are gone (exit or exec).
  void forget_counts(int pid);

  // Whether probes go per process (a link per process and library: a bound on descriptors).
  bool per_process() const { return scheduler_ || names_; }
  // The mode in neutracer_cuda_launch_counting_info: exact unless launches go per process.
  std::string mode_name() const;
  std::vector<LaunchProcessView> processes() const;
  std::set<int> estimated() const;
  double trap_seconds() const { return trap_seconds_; }

private:
  bool names_wanted(int pid) const;

  CudaTracing &tracer_;
  const ProcFs &procfs_;
  const CudaState &state_;
  LaunchCounting mode_;
  std::optional<LaunchScheduler> scheduler_;
  std::optional<NameProbeKeeper> names_;
  double trap_seconds_ = 0;    // measured cost of a counted launch; 0: unknown
  std::set<int> early_misses_; // PIDs whose early lookup failed since the last scan
};

} // namespace neutracer
