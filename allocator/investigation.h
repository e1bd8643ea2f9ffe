// SPDX-License-Identifier: Apache-2.0
#pragma once
// When a process's allocator view opens and closes. Nothing is attached to a healthy process:
// the view opens when the driver view sees device memory keep rising (or an operator asks for
// a pid), stays open for a bounded time, and a process whose view closed without a verdict waits
// `cooldown_seconds` before growth may open it again. Pure: the caller passes readings and
// times, and attaches or detaches what `decide` says.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "common/process_id.h"
#include "detectors/window_minimums.h"

namespace neutracer {

struct InvestigationSettings {
  bool automatic = true; // open on growth; false: only when asked
  // Growth that opens the view: the minimum of device memory in use rose in each of the last
  // `windows` - 1 windows by `min_growth_bytes` in all (the driver view's fast trend without
  // its steadiness and repetition tests, which is what hides a leak beside a varying step), or
  // use rose `horizon_growth_bytes` above its minimum over the last `horizon_seconds`.
  double window_seconds = 2;
  int windows = 3;
  std::uint64_t min_growth_bytes = 64ull << 20;
  double horizon_seconds = 60;
  std::uint64_t horizon_growth_bytes = 512ull << 20;
  double open_seconds = 120;     // how long a view stays open
  double cooldown_seconds = 300; // after a view closed without a verdict
  std::size_t max_open = 4;      // views open at once, host-wide
  // With max_open views open, a growth view open this long without a verdict gives its place
  // to a growing process that waits (warm-ups open views too, and must not keep a leak out).
  double yield_after_seconds = 30;
};

enum class InvestigationReason { growth, requested };
std::string_view investigation_reason_name(InvestigationReason reason);

struct InvestigationChange {
  ProcessId process;
  bool open = false; // true: attach now; false: detach now
  InvestigationReason reason = InvestigationReason::growth;
};

class Investigations {
public:
  explicit Investigations(InvestigationSettings settings = {});

  // Device memory in use by `process` at `time_ns` (the driver view, each scan).
  void observe(const ProcessId &process, std::uint64_t time_ns, std::uint64_t used_bytes);
  // An operator asked for `process`: it opens at the next decide, even in cooldown or when
  // automatic is off, if fewer than max_open views are open (true); otherwise it waits for a
  // place (false), which a growth view without a verdict gives after yield_after_seconds.
  bool request(const ProcessId &process, std::uint64_t time_ns);
  // A verdict was reached in an open view: it stays open until its time is up, and the process
  // may open again right after (no cooldown: the leak goes on).
  void verdict(const ProcessId &process);
  // The view of `process` could not be opened (no allocator probes, attach failed): it is not
  // counted open, and is not tried again until the cooldown has passed.
  void failed(const ProcessId &process, std::uint64_t time_ns);
  // What to attach and detach now: views whose time is up close, growing processes open.
  std::vector<InvestigationChange> decide(std::uint64_t now_ns);
  // An exited process: its view (if open) is gone with it; returns whether one was open.
  bool forget(const ProcessId &process);

  bool is_open(const ProcessId &process) const;
  std::size_t open_count() const;
  // When the view of `process` opened; nullopt when closed.
  std::optional<std::uint64_t> opened_at(const ProcessId &process) const;

private:
  struct Process {
    WindowMinimums windows;
    WindowMinimums horizon;
    std::uint64_t used_bytes = 0;
    std::optional<std::uint64_t> opened_ns;
    InvestigationReason reason = InvestigationReason::growth;
    std::uint64_t quiet_until_ns = 0; // cooldown end
    bool requested = false;
    bool had_verdict = false;
  };
  // The entry of `process`, created on first use.
  Process &entry(const ProcessId &process);
  bool growing(const Process &process, std::uint64_t now_ns) const;
  // Closes views that yield their place to growing processes waiting (yield_after_seconds).
  void make_room(std::uint64_t now_ns, std::vector<InvestigationChange> &changes);

  InvestigationSettings settings_;
  std::map<ProcessId, Process> processes_;
};

} // namespace neutracer
