// SPDX-License-Identifier: Apache-2.0
#include "detectors/alert_gate.h"

#include <algorithm>

#include "common/enum_names.h"

namespace neutracer {

constexpr std::array<std::string_view, 4> kAlertKindNames = {"memory_leak", "fragmentation", "oom",
                                                             "hang"};
static_assert(kAlertKindNames.size() == enum_count(AlertKind::hang));

std::string_view alert_kind_name(AlertKind kind) { return enum_name(kind, kAlertKindNames); }

AlertGate::AlertGate(AlertGateSettings settings)
    : settings_(settings),
      cooldown_ns_(static_cast<std::uint64_t>(std::max(0.0, settings.cooldown_seconds) * 1e9)),
      tokens_(settings.max_alerts_per_minute) {}

bool AlertGate::condition(AlertKind kind, const std::string &subject, bool active,
                          std::uint64_t now_ns) {
  const auto key = std::make_pair(kind, subject);
  if (!active) {
    const auto it = entries_.find(key);
    if (it == entries_.end())
      return false;
    Entry &entry = it->second;
    if (entry.owed)
      ++suppressed_[static_cast<std::size_t>(kind)];
    entry.active = false;
    entry.owed = false;
    // Once the cooldown is over the entry holds nothing a later edge needs.
    if (!cooling_down(entry, now_ns))
      entries_.erase(it);
    return false;
  }

  Entry &entry = entries_[key];
  if (!entry.active) {
    entry.active = true;
    entry.owed = true;
  }
  if (!entry.owed || cooling_down(entry, now_ns) || !take_token(now_ns))
    return false;
  notify(kind, entry, now_ns);
  return true;
}

bool AlertGate::event(AlertKind kind, const std::string &subject, std::uint64_t now_ns) {
  Entry &entry = entries_[std::make_pair(kind, subject)];
  if (cooling_down(entry, now_ns) || !take_token(now_ns)) {
    ++suppressed_[static_cast<std::size_t>(kind)];
    return false;
  }
  notify(kind, entry, now_ns);
  return true;
}

void AlertGate::forget(const std::string &subject) {
  std::erase_if(entries_, [&](const auto &item) {
    if (item.first.second != subject)
      return false;
    if (item.second.owed)
      ++suppressed_[static_cast<std::size_t>(item.first.first)];
    return true;
  });
}

std::set<std::pair<AlertKind, std::string>> AlertGate::active() const {
  std::set<std::pair<AlertKind, std::string>> result;
  for (const auto &[key, entry] : entries_)
    if (entry.active)
      result.insert(key);
  return result;
}

std::uint64_t AlertGate::sent(AlertKind kind) const {
  return sent_[static_cast<std::size_t>(kind)];
}

std::uint64_t AlertGate::suppressed(AlertKind kind) const {
  return suppressed_[static_cast<std::size_t>(kind)];
}

bool AlertGate::cooling_down(const Entry &entry, std::uint64_t now_ns) const {
  // A clock that went backwards counts as within the cooldown.
  return entry.notified_before &&
         (now_ns < entry.last_notified_ns || now_ns - entry.last_notified_ns < cooldown_ns_);
}

bool AlertGate::take_token(std::uint64_t now_ns) {
  if (settings_.max_alerts_per_minute == 0)
    return true;
  const double capacity = settings_.max_alerts_per_minute;
  if (refilled_before_ && now_ns > last_refill_ns_)
    tokens_ = std::min(capacity,
                       tokens_ + static_cast<double>(now_ns - last_refill_ns_) / 60e9 * capacity);
  if (!refilled_before_ || now_ns > last_refill_ns_)
    last_refill_ns_ = now_ns;
  refilled_before_ = true;
  if (tokens_ < 1)
    return false;
  tokens_ -= 1;
  return true;
}

void AlertGate::notify(AlertKind kind, Entry &entry, std::uint64_t now_ns) {
  entry.owed = false;
  entry.notified_before = true;
  entry.last_notified_ns = now_ns;
  ++sent_[static_cast<std::size_t>(kind)];
}

} // namespace neutracer
