// SPDX-License-Identifier: Apache-2.0
#pragma once
// Decides which alerts are delivered (journal entries, notifications). Pure: the caller passes
// the time. Alerts are keyed by kind and subject (the process).
//
// Condition alerts (leak, fragmentation storm, hang) are owed on the rising edge of the condition
// and delivered on the first call, while the condition holds, that both the cooldown since the
// last notification of that kind and subject and the global rate limit allow. A condition that
// stays active is not notified again; one that flaps within the cooldown is notified at most
// once per cooldown. A condition that clears (or is forgotten) before its notification went out
// counts as suppressed.
//
// Event alerts (each OOM) are notified per event, subject to the same per kind and subject
// cooldown: the first event within a cooldown passes and the rest count as suppressed, so that
// a process failing allocations in a loop sends one notification, not thousands; their full
// count is in the metrics. Events blocked by the rate limit are suppressed too, never queued.
//
// The rate limit is a token bucket of max_alerts_per_minute tokens refilling continuously; it
// guards the journal against a node-wide storm (every process hitting the same OOM).
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace neutracer {

enum class AlertKind : std::uint8_t { memory_leak, fragmentation, oom, hang };
inline constexpr std::size_t kAlertKinds = 4;
std::string_view alert_kind_name(AlertKind kind);

struct AlertGateSettings {
  double cooldown_seconds = 600;
  std::uint32_t max_alerts_per_minute = 30; // 0: no rate limit
};

class AlertGate {
public:
  explicit AlertGate(AlertGateSettings settings = {});

  // Reports the condition's current state; true when a notification should go out now.
  bool condition(AlertKind kind, const std::string &subject, bool active, std::uint64_t now_ns);
  // One event; true when a notification should go out now.
  bool event(AlertKind kind, const std::string &subject, std::uint64_t now_ns);
  // Drops everything about a subject (its process exited); owed notifications are suppressed.
  void forget(const std::string &subject);

  std::set<std::pair<AlertKind, std::string>> active() const;
  std::uint64_t sent(AlertKind kind) const;
  std::uint64_t suppressed(AlertKind kind) const;

private:
  struct Entry {
    bool active = false;
    bool owed = false; // rising edge not notified yet
    bool notified_before = false;
    std::uint64_t last_notified_ns = 0;
  };

  bool cooling_down(const Entry &entry, std::uint64_t now_ns) const;
  bool take_token(std::uint64_t now_ns);
  void notify(AlertKind kind, Entry &entry, std::uint64_t now_ns);

  AlertGateSettings settings_;
  std::uint64_t cooldown_ns_;
  std::map<std::pair<AlertKind, std::string>, Entry> entries_;
  double tokens_;
  std::uint64_t last_refill_ns_ = 0;
  bool refilled_before_ = false;
  std::uint64_t sent_[kAlertKinds] = {};
  std::uint64_t suppressed_[kAlertKinds] = {};
};

} // namespace neutracer
