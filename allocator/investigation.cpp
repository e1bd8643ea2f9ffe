// SPDX-License-Identifier: Apache-2.0
#include "allocator/investigation.h"

#include <algorithm>
#include <array>

#include "common/enum_names.h"

namespace neutracer {
namespace {

constexpr std::array<std::string_view, 2> kInvestigationReasonNames{"growth", "requested"};
static_assert(kInvestigationReasonNames.size() == enum_count(InvestigationReason::requested));

// The horizon's minimum is kept in this many windows: bounded, and coarse enough that a dip
// older than the horizon leaves within one window of it.
constexpr std::size_t kHorizonWindows = 6;

std::uint64_t nanoseconds(double seconds) {
  return static_cast<std::uint64_t>(std::max(0.0, seconds) * 1e9);
}

WindowMinimums growth_windows(const InvestigationSettings &settings) {
  return WindowMinimums(settings.window_seconds,
                        static_cast<std::size_t>(std::max(2, settings.windows)));
}

WindowMinimums horizon_windows(const InvestigationSettings &settings) {
  return WindowMinimums(settings.horizon_seconds / static_cast<double>(kHorizonWindows),
                        kHorizonWindows);
}


} // namespace

std::string_view investigation_reason_name(InvestigationReason reason) {
  return enum_name(reason, kInvestigationReasonNames);
}

Investigations::Investigations(InvestigationSettings settings) : settings_(settings) {}

Investigations::Process &Investigations::entry(const ProcessId &process) {
  return processes_.try_emplace(process, growth_windows(settings_), horizon_windows(settings_))
      .first->second;
}

void Investigations::observe(const ProcessId &process, std::uint64_t time_ns,
                             std::uint64_t used_bytes) {
  Process &state = entry(process);
  state.windows.observe(time_ns, used_bytes);
  state.horizon.observe(time_ns, used_bytes);
  state.used_bytes = used_bytes;
}

bool Investigations::request(const ProcessId &process, std::uint64_t /*time_ns*/) {
  if (is_open(process))
    return true; // already being looked at
  // Kept when every place is taken: it opens when one frees, before any growth view.
  entry(process).requested = true;
  return open_count() < settings_.max_open;
}

void Investigations::verdict(const ProcessId &process) {
  if (const auto found = processes_.find(process);
      found != processes_.end() && found->second.opened_ns)
    found->second.had_verdict = true;
}

void Investigations::failed(const ProcessId &process, std::uint64_t time_ns) {
  Process &state = entry(process);
  state.opened_ns.reset();
  state.requested = false;
  state.had_verdict = false;
  state.quiet_until_ns = time_ns + nanoseconds(settings_.cooldown_seconds);
}

bool Investigations::growing(const Process &process, std::uint64_t now_ns) const {
  if (rising_minimums(process.windows.last_complete(now_ns), process.windows.windows(),
             settings_.min_growth_bytes))
    return true;
  // A bursty growth never rises in every window; over the horizon it still shows. The current
  // level stands in for the window still open.
  const auto horizon = process.horizon.last_complete(now_ns);
  if (horizon.empty())
    return false; // no history yet to rise above
  const std::uint64_t lowest =
      std::min(*std::min_element(horizon.begin(), horizon.end()), process.used_bytes);
  return process.used_bytes - lowest >= settings_.horizon_growth_bytes;
}

std::vector<InvestigationChange> Investigations::decide(std::uint64_t now_ns) {
  std::vector<InvestigationChange> changes;
  const std::uint64_t open_ns = nanoseconds(settings_.open_seconds);
  for (auto &[process, state] : processes_) {
    if (!state.opened_ns || now_ns - std::min(now_ns, *state.opened_ns) < open_ns)
      continue;
    changes.push_back({process, false, state.reason});
    state.opened_ns.reset();
    if (state.had_verdict) {
      // The leak goes on: no cooldown, but it must show growth again to reopen.
      state.windows = growth_windows(settings_);
      state.horizon = horizon_windows(settings_);
    } else {
      state.quiet_until_ns = now_ns + nanoseconds(settings_.cooldown_seconds);
    }
    state.had_verdict = false;
  }

  make_room(now_ns, changes);
  std::size_t open = open_count();
  const auto open_view = [&](const ProcessId &process, Process &state, InvestigationReason reason) {
    state.opened_ns = now_ns;
    state.reason = reason;
    state.requested = false;
    state.had_verdict = false;
    changes.push_back({process, true, reason});
    ++open;
  };
  // Operators first: a request is bounded by max_open only.
  for (auto &[process, state] : processes_) {
    if (open >= settings_.max_open)
      return changes;
    if (state.requested && !state.opened_ns)
      open_view(process, state, InvestigationReason::requested);
  }
  if (!settings_.automatic)
    return changes;
  for (auto &[process, state] : processes_) {
    if (open >= settings_.max_open)
      return changes;
    if (!state.opened_ns && now_ns >= state.quiet_until_ns && growing(state, now_ns))
      open_view(process, state, InvestigationReason::growth);
  }
  return changes;
}

void Investigations::make_room(std::uint64_t now_ns, std::vector<InvestigationChange> &changes) {
  if (!settings_.automatic)
    return;
  std::size_t waiting = 0;
  for (const auto &[process, state] : processes_)
    if (!state.opened_ns &&
        (state.requested || (now_ns >= state.quiet_until_ns && growing(state, now_ns))))
      ++waiting;
  const std::uint64_t yield_ns = nanoseconds(settings_.yield_after_seconds);
  for (std::size_t open = open_count(); waiting > 0 && open >= settings_.max_open; --waiting) {
    // The oldest growth view without a verdict that had its time.
    Process *oldest = nullptr;
    const ProcessId *oldest_id = nullptr;
    for (auto &[process, state] : processes_)
      if (state.opened_ns && state.reason == InvestigationReason::growth && !state.had_verdict &&
          now_ns - std::min(now_ns, *state.opened_ns) >= yield_ns &&
          (!oldest || *state.opened_ns < *oldest->opened_ns)) {
        oldest = &state;
        oldest_id = &process;
      }
    if (!oldest)
      return;
    changes.push_back({*oldest_id, false, oldest->reason});
    oldest->opened_ns.reset();
    oldest->quiet_until_ns = now_ns + nanoseconds(settings_.cooldown_seconds);
    --open;
  }
}

bool Investigations::forget(const ProcessId &process) {
  const auto found = processes_.find(process);
  if (found == processes_.end())
    return false;
  const bool was_open = found->second.opened_ns.has_value();
  processes_.erase(found);
  return was_open;
}

bool Investigations::is_open(const ProcessId &process) const {
  const auto found = processes_.find(process);
  return found != processes_.end() && found->second.opened_ns.has_value();
}

std::size_t Investigations::open_count() const {
  return static_cast<std::size_t>(
      std::count_if(processes_.begin(), processes_.end(),
                    [](const auto &entry) { return entry.second.opened_ns.has_value(); }));
}

std::optional<std::uint64_t> Investigations::opened_at(const ProcessId &process) const {
  const auto found = processes_.find(process);
  if (found == processes_.end())
    return std::nullopt;
  return found->second.opened_ns;
}

} // namespace neutracer
