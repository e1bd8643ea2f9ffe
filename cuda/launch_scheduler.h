// SPDX-License-Identifier: Apache-2.0
#pragma once
// Adaptive launch counting, process by process: which processes have launch probes, when their
// counting windows open and close, and the scaled launch totals that follow (LaunchScaler).
// Kernel-facing work goes through LaunchProbeControl.
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_discovery.h"
#include "cuda/launch_probe_control.h"
#include "cuda/launch_sampling.h"

namespace neutracer {

// A rule choosing a process's counting mode: `pattern` (fnmatch(3)) matches its comm, its
// executable path or its container id. The first rule that matches wins.
struct LaunchRule {
  std::string pattern;
  LaunchCounting mode = LaunchCounting::adaptive;
  bool operator==(const LaunchRule &) const = default;
};
LaunchCounting launch_counting_for(const CudaProcess &process, LaunchCounting default_mode,
                                   const std::vector<LaunchRule> &rules);

struct LaunchProcessView {
  int pid = 0;
  LaunchCounting mode = LaunchCounting::adaptive;
  double window_fraction = 1;  // share of each period counted now
  double counted_fraction = 1; // share of time counted since the process was first seen
  bool estimated = false;      // some of its totals are scaled from sampled windows
  double relative_error = 0;   // 95 % bound on its totals' relative error (LaunchScaler)
};

class LaunchScheduler {
public:
  // `clock` (CLOCK_MONOTONIC ns) times the gates, read after each attach: attaching takes
  // milliseconds, which must not count as counted time. Null: the times passed in.
  LaunchScheduler(LaunchCounting default_mode, std::vector<LaunchRule> rules,
                  LaunchSamplingSettings settings, LaunchProbeControl &probes,
                  std::function<std::uint64_t()> clock = nullptr);

  // After a scan: probes for new processes, none for processes gone. Times: CLOCK_MONOTONIC ns.
  // A process absent from `processes` for which `unknown` is true (the scan could not read it)
  // keeps its probes.
  void update_processes(const std::vector<CudaProcess> &processes, std::uint64_t now_ns,
                        const std::function<bool(int)> &unknown = {});
  // A process seen before its first scan (its first probed call): probes now, so that its
  // first launches are counted too.
  void track(const CudaProcess &process, std::uint64_t now_ns);
  bool tracks(int pid) const { return processes_.contains(pid); }
  // Opens and closes windows that are due; call at least by next_deadline_ns().
  void tick(std::uint64_t now_ns);
  std::uint64_t next_deadline_ns() const;
  // Whether a sampled process still launches kernels it has no name for; its windows attach
  // the probes of the calls that name them (cuKernelGetFunction) only then. Unset: always.
  void set_names_wanted(std::function<bool(int)> wanted) { names_wanted_ = std::move(wanted); }
  // Whether every GPU a process runs on was busy all the time lately: its launching threads
  // then wait on the GPU, not on their launches, and its windows are not corrected for traps.
  // Unset: never.
  void set_gpu_saturated(std::function<bool(int)> saturated) {
    gpu_saturated_ = std::move(saturated);
  }
  // Where each sampled window lies in its period is drawn at random (uniformly over the time
  // the window fits in), so that a run that starts or stops inside a period, or launches in
  // bursts that repeat with the period, is not counted high or low on average. Tests seed it.
  void seed_window_placement(std::uint64_t seed) { placement_.seed(seed); }
  // A full counter read at now_ns; returns the scaled totals of every process.
  std::vector<LaunchCount> read(std::uint64_t now_ns);
  std::vector<LaunchProcessView> processes() const;
  // The in-kernel counters of `pid` were deleted (exit or exec): its totals start over.
  void forget_counts(int pid) { scaler_.forget_counters(static_cast<std::uint32_t>(pid)); }

private:
  struct Tracked {
    LaunchCounting mode;
    std::vector<LibraryId> libraries;
    std::uint64_t start_ticks = 0; // a PID that comes back with another start is a new process
    bool warned = false;           // an attach failure is logged once per process
    bool attached = false;
    bool name_calls = false; // the attached probes include the calls that name kernels
    double fraction = 1;
    std::uint64_t open_ns = 0;  // when this period's sampled window opens; 0 when none waits
    std::uint64_t close_ns = 0; // window end while a sampled window is open; 0 otherwise
    std::uint64_t opened_ns = 0; // when the gate last opened
  };
  // Returns the time the gate opened, 0 when no probe could be attached.
  std::uint64_t open_window(int pid, Tracked &process, std::uint64_t now_ns);
  std::uint64_t now(std::uint64_t fallback_ns) const { return clock_ ? clock_() : fallback_ns; }
  void close_window(int pid, Tracked &process, std::uint64_t now_ns);
  void start_period(std::uint64_t now_ns);
  // The sampled window of a period that starts at now_ns: its opening, drawn at random.
  std::uint64_t place_window(const Tracked &process, std::uint64_t now_ns);
  std::uint64_t window_ns(const Tracked &process) const;
  void forget(int pid);

  LaunchCounting default_mode_;
  std::vector<LaunchRule> rules_;
  LaunchSamplingSettings settings_;
  LaunchProbeControl &probes_;
  std::function<std::uint64_t()> clock_;
  std::function<bool(int)> names_wanted_;
  std::function<bool(int)> gpu_saturated_;
  LaunchScaler scaler_;
  std::map<int, Tracked> processes_;
  std::uint64_t next_period_ns_ = 0;
  std::mt19937_64 placement_{std::random_device{}()};
};

} // namespace neutracer
