// SPDX-License-Identifier: Apache-2.0
#include "cuda/launch_scheduler.h"

#include <algorithm>
#include <fnmatch.h>
#include <set>
#include <spdlog/spdlog.h>
#include <utility>

namespace neutracer {

LaunchCounting launch_counting_for(const CudaProcess &process, LaunchCounting default_mode,
                                   const std::vector<LaunchRule> &rules) {
  const auto matches = [](const std::string &pattern, const std::string &text) {
    return !text.empty() && fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
  };
  for (const auto &rule : rules)
    if (matches(rule.pattern, process.comm) || matches(rule.pattern, process.exe) ||
        matches(rule.pattern, process.container.identity.id))
      return rule.mode;
  return default_mode;
}

LaunchScheduler::LaunchScheduler(LaunchCounting default_mode, std::vector<LaunchRule> rules,
                                 LaunchSamplingSettings settings, LaunchProbeControl &probes,
                                 std::function<std::uint64_t()> clock)
    : default_mode_(default_mode), rules_(std::move(rules)), settings_(settings), probes_(probes),
      clock_(std::move(clock)), scaler_(settings.trap_ns) {}

std::uint64_t LaunchScheduler::open_window(int pid, Tracked &process, std::uint64_t now_ns) {
  const auto tgid = static_cast<std::uint32_t>(pid);
  if (!process.attached) {
    probes_.drop_sampled_calls(tgid);
    std::string error;
    // PyTorch asks cuKernelGetFunction before most launches: two more traps and a map update
    // each. A sampled window needs them only while some kernel still lacks its name.
    const bool name_calls = process.fraction >= 1 || !names_wanted_ || names_wanted_(pid);
    if (probes_.attach_launch_probes(pid, process.libraries, name_calls, error) == 0) {
      if (!error.empty()) {
        if (!std::exchange(process.warned, true))
          spdlog::warn("{}", error);
      }
      return 0;
    }
    process.attached = true;
    process.name_calls = name_calls;
  }
  const auto opened = now(now_ns);
  probes_.set_launch_gate(tgid, true);
  scaler_.set_counting(tgid, true, opened);
  process.opened_ns = opened;
  return opened;
}

void LaunchScheduler::close_window(int pid, Tracked &process, std::uint64_t now_ns) {
  const auto tgid = static_cast<std::uint32_t>(pid);
  // Gate first: counting stops now, while the probes are still being removed.
  probes_.set_launch_gate(tgid, false);
  const auto closed = now(now_ns);
  scaler_.set_counting(tgid, false, closed);
  if (spdlog::should_log(spdlog::level::debug) && process.opened_ns != 0) {
    // When the probes were on, for tests/bench/gpu/paired.py (it times the process's work
    // inside and outside them); then how the window's launches sat in it (the counting
    // error's cause, count_error.py).
    spdlog::debug("pid {}: launch probes on from {} to {} ns (CLOCK_MONOTONIC)", pid,
                  process.opened_ns, closed);
    const auto hits = probes_.launch_gate_hits(tgid);
    if (hits.launches > 0)
      spdlog::debug("pid {}: window open {} ns: {} launches, first {} ns after opening, last {} "
                    "ns before closing{}",
                    pid, closed - process.opened_ns, hits.launches,
                    static_cast<std::int64_t>(hits.first_ns - process.opened_ns),
                    static_cast<std::int64_t>(closed - hits.last_ns),
                    process.name_calls ? ", naming calls probed" : "");
  }
  if (process.attached)
    probes_.detach_launch_probes(pid);
  process.attached = false;
  process.close_ns = 0;
}

void LaunchScheduler::update_processes(const std::vector<CudaProcess> &processes,
                                       std::uint64_t now_ns,
                                       const std::function<bool(int)> &unknown) {
  if (next_period_ns_ == 0)
    next_period_ns_ = now_ns + settings_.period_ns;
  std::set<int> present;
  for (const auto &process : processes) {
    present.insert(process.id.pid);
    track(process, now_ns);
  }
  std::vector<int> gone;
  for (const auto &[pid, process] : processes_)
    if (!present.contains(pid) && !(unknown && unknown(pid)))
      gone.push_back(pid);
  for (const int pid : gone)
    forget(pid);
}

void LaunchScheduler::forget(int pid) {
  const auto it = processes_.find(pid);
  if (it == processes_.end())
    return;
  if (it->second.attached)
    probes_.detach_launch_probes(pid);
  probes_.forget_launch_gate(static_cast<std::uint32_t>(pid));
  scaler_.forget(static_cast<std::uint32_t>(pid));
  processes_.erase(it);
}

void LaunchScheduler::track(const CudaProcess &process, std::uint64_t now_ns) {
  if (next_period_ns_ == 0)
    next_period_ns_ = now_ns + settings_.period_ns;
  if (const auto known = processes_.find(process.id.pid);
      known != processes_.end() && known->second.start_ticks != process.id.start_ticks)
    forget(process.id.pid); // the PID was reused: the old probes watch the old process
  auto [it, inserted] = processes_.try_emplace(
      process.id.pid, Tracked{launch_counting_for(process, default_mode_, rules_),
                              process.libraries, process.id.start_ticks});
  if (!inserted) {
    it->second.libraries = process.libraries;
    // Attached early through libraries the scan had not seen: retry with the full list.
    if (!it->second.attached && it->second.close_ns == 0 && it->second.fraction >= 1 &&
        it->second.mode != LaunchCounting::off)
      open_window(process.id.pid, it->second, now_ns);
    return;
  }
  if (it->second.mode == LaunchCounting::off)
    scaler_.set_counting(static_cast<std::uint32_t>(process.id.pid), false, now_ns);
  else
    open_window(process.id.pid, it->second, now_ns); // exact until its rate is known
}

void LaunchScheduler::start_period(std::uint64_t now_ns) {
  // What every process counted in the period now ending, scaled, and its rate.
  scaler_.apply_read(probes_.read_launch_counts(), now_ns);
  for (auto &[pid, process] : processes_) {
    if (process.mode == LaunchCounting::off)
      continue;
    if (process.mode == LaunchCounting::adaptive) {
      if (process.fraction < 1 && spdlog::should_log(spdlog::level::debug)) {
        // The raw figures of each window, for tests/bench/gpu (the counting error's cause).
        const auto window = scaler_.last_window(static_cast<std::uint32_t>(pid));
        spdlog::debug("pid {}: launch window {} ns of {} ns, {} launches counted", pid,
                      window.on_ns, window.elapsed_ns, window.launches);
      }
      const double rate = scaler_.rate(static_cast<std::uint32_t>(pid));
      const double fraction = launch_window_fraction(settings_, rate);
      if ((fraction < 1) != (process.fraction < 1))
        spdlog::debug("pid {}: {:.0f} launches/s while counted: counting {:.1f} % of each period",
                      pid, rate, 100 * fraction);
      process.fraction = fraction;
      scaler_.set_sampled(static_cast<std::uint32_t>(pid), process.fraction < 1);
      scaler_.set_launch_bound(static_cast<std::uint32_t>(pid),
                               !(gpu_saturated_ && gpu_saturated_(pid)));
    }
    if (process.fraction >= 1) {
      process.close_ns = 0; // counted all along: probes stay attached
      process.open_ns = 0;
      if (!process.attached)
        open_window(pid, process, now_ns);
      continue;
    }
    // Probes still attached (the process was exact, or a late tick left its last window open)
    // stay, and this period's window runs from now: no removal and attach back to back.
    if (process.attached) {
      process.opened_ns = now(now_ns);
      process.close_ns = process.opened_ns + window_ns(process);
      process.open_ns = 0;
    } else {
      process.open_ns = place_window(process, now_ns);
    }
  }
}

std::uint64_t LaunchScheduler::window_ns(const Tracked &process) const {
  return static_cast<std::uint64_t>(process.fraction * static_cast<double>(settings_.period_ns));
}

std::uint64_t LaunchScheduler::place_window(const Tracked &process, std::uint64_t now_ns) {
  // The window must close before the period ends (its counts are taken then); attaching the
  // probes takes milliseconds, hence the margin.
  const std::uint64_t margin = std::min<std::uint64_t>(settings_.period_ns / 20, 50'000'000);
  const std::uint64_t length = window_ns(process);
  const std::uint64_t slack =
      settings_.period_ns > length + margin ? settings_.period_ns - length - margin : 0;
  const auto offset = std::uniform_int_distribution<std::uint64_t>(0, slack)(placement_);
  return std::max<std::uint64_t>(now_ns + offset, 1);
}

void LaunchScheduler::tick(std::uint64_t now_ns) {
  for (auto &[pid, process] : processes_) {
    if (process.close_ns != 0 && now_ns >= process.close_ns)
      close_window(pid, process, now_ns);
    if (process.open_ns != 0 && now_ns >= process.open_ns) {
      process.open_ns = 0;
      if (const auto opened = open_window(pid, process, now_ns); opened != 0)
        process.close_ns = opened + window_ns(process);
    }
  }
  if (next_period_ns_ != 0 && now_ns >= next_period_ns_) {
    start_period(now_ns);
    next_period_ns_ += settings_.period_ns;
    if (next_period_ns_ <= now_ns) // fell behind: no burst of periods
      next_period_ns_ = now_ns + settings_.period_ns;
  }
}

std::uint64_t LaunchScheduler::next_deadline_ns() const {
  std::uint64_t deadline = next_period_ns_ == 0 ? UINT64_MAX : next_period_ns_;
  for (const auto &[pid, process] : processes_) {
    if (process.close_ns != 0)
      deadline = std::min(deadline, process.close_ns);
    if (process.open_ns != 0)
      deadline = std::min(deadline, process.open_ns);
  }
  return deadline;
}

std::vector<LaunchCount> LaunchScheduler::read(std::uint64_t now_ns) {
  scaler_.apply_read(probes_.read_launch_counts(), now_ns, false);
  return scaler_.totals();
}

std::vector<LaunchProcessView> LaunchScheduler::processes() const {
  std::vector<LaunchProcessView> views;
  for (const auto &[pid, process] : processes_) {
    const auto tgid = static_cast<std::uint32_t>(pid);
    views.push_back({pid, process.mode, process.mode == LaunchCounting::off ? 0 : process.fraction,
                     process.mode == LaunchCounting::off ? 0 : scaler_.counted_fraction(tgid),
                     scaler_.estimated(tgid), scaler_.relative_error(tgid)});
  }
  return views;
}

} // namespace neutracer
