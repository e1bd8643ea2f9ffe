#include "cuda/launch_sampling.h"

#include <algorithm>
#include <cmath>

namespace neutracer {

std::string_view launch_counting_name(LaunchCounting mode) {
  switch (mode) {
  case LaunchCounting::exact:
    return "exact";
  case LaunchCounting::adaptive:
    return "adaptive";
  case LaunchCounting::off:
    return "off";
  }
  return "?";
}

std::optional<LaunchCounting> parse_launch_counting(std::string_view text) {
  for (const auto mode : {LaunchCounting::exact, LaunchCounting::adaptive, LaunchCounting::off})
    if (text == launch_counting_name(mode))
      return mode;
  return std::nullopt;
}

double launch_window_fraction(const LaunchSamplingSettings &settings, double launches_per_second) {
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

void LaunchScaler::apply_read(const std::vector<LaunchCount> &raw, std::uint64_t now_ns,
                              bool period_end) {
  std::map<Process, std::uint64_t> counted; // per process, launches since its previous read
  const auto taken = [&](Process process) {
    const auto timing = timing_.find(process);
    return period_end || timing == timing_.end() || !timing->second.sampled;
  };
  for (auto &[process, timing] : timing_)
    advance(timing, now_ns);
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
    const Process process = entry.tgid;
    const auto timing = timing_.find(process);
    double scale = 1.0;
    if (timing != timing_.end() && timing->second.on_ns > 0)
      scale = static_cast<double>(timing->second.elapsed_ns) /
              static_cast<double>(timing->second.on_ns);
    counter.estimate += static_cast<double>(delta) * scale;
    counted[process] += delta;
  }
  for (auto &[process, timing] : timing_) {
    if (!taken(process))
      continue;
    if (timing.on_ns > 0) {
      const auto found = counted.find(process);
      const double launches = found == counted.end() ? 0.0 : static_cast<double>(found->second);
      timing.rate = launches / (static_cast<double>(timing.on_ns) / 1e9);
    }
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

void LaunchScaler::forget(const Process &process) {
  timing_.erase(process);
  forget_counters(process);
}

void LaunchScaler::forget_counters(const Process &process) {
  std::erase_if(counters_, [&](const auto &entry) { return entry.first.tgid == process; });
}

} // namespace neutracer
