// SPDX-License-Identifier: Apache-2.0
#pragma once
// Launch counting that a busy process does not feel. Every counted launch costs the traced
// thread one kernel trap (0.5-6 us by host; docs/architecture.md), so above a launch rate the
// launch probes of a process are attached only for a window of each period, and the counts
// of that window are scaled by period / window. Pure logic: when to count, and the scaling.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/launch_counting.h"
#include "cuda/cuda_state.h"

namespace neutracer {


struct LaunchSamplingSettings {
  double max_rate = 1000; // counted launches per second per process, at most
  std::uint64_t period_ns = 1'000'000'000;
  double min_fraction = 0.005; // a sampled window is at least this share of a period
  // What one counted launch costs the launching thread (trap_calibration.h); 0: unknown.
  double trap_ns = 0;
  // Above 0: every process whose rate is known is counted for this share of each period,
  // whatever its rate (cuda.launch_sample_fraction; the paired cost benchmark uses 0.5).
  double fixed_fraction = 0;
};

// The share of each period a process's launch probes stay attached, from its launch rate:
// 1 while the rate is at most max_rate; above, max_rate / rate (never below min_fraction);
// fixed_fraction whatever the rate when that is set.
double launch_window_fraction(const LaunchSamplingSettings &settings, double launches_per_second);

// Turns full reads of the raw in-kernel counters into estimated totals. Each process's counting
// is switched on and off (its gate). What a process counted since its counts were last taken is
// scaled by the time since then over the time counting was on: at every read for a process
// counted all along (scale 1), and only at the end of a period for a sampled process, whose one
// window stands for the whole period. Totals only grow.
//
// A thread whose speed is set by its own launching runs slower while they are counted (each
// costs it a trap), so a window sees fewer launches per second than the rest of the period.
// With the trap's cost known, a sampled window's counting time is taken less the traps it
// held (at most half of it): the time the same launches take untraced. A thread that waits
// for the GPU instead absorbs its traps: a process whose GPUs are busy all the time gets no
// correction (set_launch_bound; docs/architecture.md).
class LaunchScaler {
public:
  explicit LaunchScaler(double trap_ns = 0) : trap_ns_(trap_ns) {}

  // A process by PID: the scheduler forgets a process when it exits, before its PID returns.
  using Process = std::uint32_t;

  // Counting for `process` starts (true) or stops (false) at now_ns (CLOCK_MONOTONIC).
  void set_counting(const Process &process, bool on, std::uint64_t now_ns);
  // Sampled processes have one window per period; their counts are taken at period ends only.
  void set_sampled(const Process &process, bool sampled);
  // Whether the process's launching threads wait on their own launches (the default) rather
  // than on a GPU that is busy all the time; only the former lose time to their traps.
  void set_launch_bound(const Process &process, bool launch_bound);
  // A full read of the counters at now_ns; `period_end`: a sampling period ends now.
  void apply_read(const std::vector<LaunchCount> &raw, std::uint64_t now_ns,
                  bool period_end = true);
  // Estimated totals, one per counter key seen.
  std::vector<LaunchCount> totals() const;
  // Launches per second counted while on, over the last read interval with on time; 0 if none.
  double rate(const Process &process) const;
  // Share of time counted since the process was first seen (1 = exact).
  double counted_fraction(const Process &process) const;
  // Whether some of the process's totals are scaled from sampled windows (not exact counts).
  bool estimated(const Process &process) const;
  // A 95 % bound on the relative error of the process's estimated totals: 0 when counted all
  // along; 1 (no bound) before three sampled windows. Three parts, added: the spread of the
  // windows' rates (1.96 standard errors of their mean; each window stands for its period);
  // the share of window time its traps took (the trap correction may be wrong by as much as it
  // takes off; a process not corrected may be low by as much); and 2 / windows for the periods
  // in which its launching starts and stops (each may be counted double or not at all).
  double relative_error(const Process &process) const;
  // What the last taken read of a process held: launches counted, counting time and the time
  // they stand for (for a sampled process, its last window and period).
  struct Window {
    std::uint64_t launches = 0;
    std::uint64_t on_ns = 0;
    std::uint64_t elapsed_ns = 0;
  };
  Window last_window(const Process &process) const;
  void forget(const Process &process);
  // Drops the counters only (an exec starts the image's counts over); timing goes on.
  void forget_counters(const Process &process);

private:
  struct Key {
    std::uint32_t tgid;
    std::uint64_t proc_start_ns;
    std::uint32_t api;
    std::uint64_t handle;
    std::uint64_t context;
    auto operator<=>(const Key &) const = default;
  };
  struct Counter {
    std::uint64_t raw = 0; // last raw value read
    double estimate = 0;   // scaled total
  };
  struct Timing {
    bool on = false;
    bool sampled = false;
    bool launch_bound = true;
    std::uint64_t since_ns = 0;   // last gate change or read
    std::uint64_t on_ns = 0;      // counting time since the last read
    std::uint64_t elapsed_ns = 0; // time since the last read
    std::uint64_t total_on_ns = 0;
    std::uint64_t total_ns = 0;
    double rate = 0;
    Window last;
    // Sampled windows: their corrected launch rates (Welford's running mean and squared
    // deviations) and the largest share of a window's time its traps took.
    std::uint64_t windows = 0;
    double rate_mean = 0;
    double rate_m2 = 0;
    double trap_share = 0;
  };
  void advance(Timing &timing, std::uint64_t now_ns);

  double trap_ns_;
  std::map<Key, Counter> counters_;
  std::map<Process, Timing> timing_;
};

} // namespace neutracer
