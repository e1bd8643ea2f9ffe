// SPDX-License-Identifier: Apache-2.0
#include "cuda/launch_sampling.h"

#include <algorithm>
#include <cmath>

namespace neutracer {

double launch_window_fraction(const LaunchSamplingSettings &settings, double launches_per_second) {
  if (settings.fixed_fraction > 0)
    return std::min(settings.fixed_fraction, 1.0);
  if (!(launches_per_second > settings.max_rate))
    return 1.0;
  return std::clamp(settings.max_rate / launches_per_second, settings.min_fraction, 1.0);
}

void LaunchScaler::advance(Timing &timing, std::uint64_t now_ns) {
  if (now_ns <= timing.since_ns)
    return;
  const auto step = now_ns - timing.since_ns;
  timing.elapsed_ns += step;
  timing.total_ns += step;
  if (timing.on) {
    timing.on_ns += step;
    timing.total_on_ns += step;
  }
  timing.since_ns = now_ns;
}

void LaunchScaler::set_counting(const Process &process, bool on, std::uint64_t now_ns) {
  auto [it, inserted] = timing_.try_emplace(process);
  if (inserted)
    it->second.since_ns = now_ns;
  advance(it->second, now_ns);
  it->second.on = on;
}

void LaunchScaler::set_sampled(const Process &process, bool sampled) {
  timing_[process].sampled = sampled;
}

void LaunchScaler::set_launch_bound(const Process &process, bool launch_bound) {
  timing_[process].launch_bound = launch_bound;
}

void LaunchScaler::apply_read(const std::vector<LaunchCount> &raw, std::uint64_t now_ns,
                              bool period_end) {
  const auto taken = [&](Process process) {
    const auto timing = timing_.find(process);
    return period_end || timing == timing_.end() || !timing->second.sampled;
  };
  for (auto &[process, timing] : timing_)
    advance(timing, now_ns);
  // New launches per counter, and per process (the traps its window held).
  struct Delta {
    Counter *counter;
    Process process;
    std::uint64_t launches;
  };
  std::vector<Delta> deltas;
  std::map<Process, std::uint64_t> counted;
  for (const auto &entry : raw) {
    if (!taken(entry.tgid))
      continue; // a sampled process's window stands for its whole period: at its end
    const Key key{entry.tgid, entry.proc_start_ns, static_cast<std::uint32_t>(entry.api),
                  entry.handle, entry.context};
    auto &counter = counters_[key];
    // A counter that went back was deleted and created again: all of it is new.
    const auto delta = entry.count >= counter.raw ? entry.count - counter.raw : entry.count;
    counter.raw = entry.count;
    if (delta == 0)
      continue;
    deltas.push_back({&counter, entry.tgid, delta});
    counted[entry.tgid] += delta;
  }
  std::map<Process, double> scales;
  for (const auto &[process, launches] : counted) {
    const auto timing = timing_.find(process);
    if (timing == timing_.end() || timing->second.on_ns == 0)
      continue; // counted without a known window: taken as they are
    auto &t = timing->second;
    double on_ns = static_cast<double>(t.on_ns);
    const double traps_ns = std::min(static_cast<double>(launches) * trap_ns_, on_ns / 2);
    if (t.sampled && t.launch_bound)
      on_ns -= traps_ns;
    scales[process] = static_cast<double>(t.elapsed_ns) / on_ns;
    if (t.sampled) {
      const double window_rate = static_cast<double>(launches) / on_ns;
      ++t.windows;
      const double delta = window_rate - t.rate_mean;
      t.rate_mean += delta / static_cast<double>(t.windows);
      t.rate_m2 += delta * (window_rate - t.rate_mean);
      t.trap_share = std::max(t.trap_share, traps_ns / static_cast<double>(t.on_ns));
    }
  }
  for (const auto &delta : deltas) {
    const auto scale = scales.find(delta.process);
    delta.counter->estimate +=
        static_cast<double>(delta.launches) * (scale == scales.end() ? 1.0 : scale->second);
  }
  for (auto &[process, timing] : timing_) {
    if (!taken(process))
      continue;
    const auto found = counted.find(process);
    const std::uint64_t launches = found == counted.end() ? 0 : found->second;
    if (timing.on_ns > 0)
      timing.rate = static_cast<double>(launches) / (static_cast<double>(timing.on_ns) / 1e9);
    timing.last = {launches, timing.on_ns, timing.elapsed_ns};
    timing.on_ns = 0;
    timing.elapsed_ns = 0;
  }
}

std::vector<LaunchCount> LaunchScaler::totals() const {
  std::vector<LaunchCount> totals;
  totals.reserve(counters_.size());
  for (const auto &[key, counter] : counters_)
    totals.push_back({key.tgid, key.proc_start_ns, static_cast<nt_api>(key.api), key.handle,
                      static_cast<std::uint64_t>(std::llround(counter.estimate)), key.context});
  return totals;
}

double LaunchScaler::rate(const Process &process) const {
  const auto it = timing_.find(process);
  return it == timing_.end() ? 0.0 : it->second.rate;
}

double LaunchScaler::counted_fraction(const Process &process) const {
  const auto it = timing_.find(process);
  if (it == timing_.end() || it->second.total_ns == 0)
    return it != timing_.end() && it->second.on ? 1.0 : 0.0;
  return static_cast<double>(it->second.total_on_ns) / static_cast<double>(it->second.total_ns);
}

bool LaunchScaler::estimated(const Process &process) const {
  const auto it = timing_.find(process);
  return it != timing_.end() && it->second.windows > 0;
}

double LaunchScaler::relative_error(const Process &process) const {
  const auto it = timing_.find(process);
  if (it == timing_.end() || !estimated(process))
    return 0;
  const auto &t = it->second;
  if (t.windows < 3 || !(t.rate_mean > 0))
    return 1;
  const double n = static_cast<double>(t.windows);
  const double spread = std::sqrt(t.rate_m2 / (n - 1)) / t.rate_mean / std::sqrt(n);
  // A run that starts or stops inside a period: its window stands for the whole period, so
  // that period may be counted up to twice or not at all; two such periods among n.
  const double edges = 2 / n;
  return std::min(1.0, 1.96 * spread + t.trap_share + edges);
}

LaunchScaler::Window LaunchScaler::last_window(const Process &process) const {
  const auto it = timing_.find(process);
  return it == timing_.end() ? Window{} : it->second.last;
}

void LaunchScaler::forget(const Process &process) {
  timing_.erase(process);
  forget_counters(process);
}

void LaunchScaler::forget_counters(const Process &process) {
  std::erase_if(counters_, [&](const auto &entry) { return entry.first.tgid == process; });
}

} // namespace neutracer
