// SPDX-License-Identifier: Apache-2.0
#pragma once
// Runs every detector for every traced process once per scan and decides, through the alert
// gate, which findings become notifications. Pure: the caller passes state, CPU time and time.
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_discovery.h"
#include "cuda/memory_change.h"
#include "detectors/alert_gate.h"
#include "detectors/device_headroom.h"
#include "detectors/hang_detector.h"
#include "detectors/leak_detector.h"
#include "detectors/oom_classifier.h"

namespace neutracer {

class CudaState;

struct DetectorSettings {
  LeakSettings leak;
  HangSettings hang;
  FragmentationSettings fragmentation;
  AlertGateSettings gate;
};

// What the detectors concluded about one process at the last scan.
struct ProcessFindings {
  std::string comm;
  ContainerInfo container;
  std::uint64_t gpu_bytes_in_use = 0;
  LeakVerdict leak;
  HangVerdict hang;
  double fragmentation_ratio = 0;
  std::uint64_t segments = 0;
  std::uint64_t largest_segment = 0;
  std::uint64_t alloc_retries = 0;
  bool retry_storm = false;
  std::array<std::uint64_t, kOomCauses> ooms{};
  std::optional<OomEvent> last_oom;
};

// The code an alert points at, as the daemon's call sites name it (stacks/).
struct NoticeSite {
  std::string function; // demangled function, or Python function; empty when unknown
  std::string module;   // the ELF file, or the Python source file
  std::string location; // "module+0x1a2b" (native) or "file:line" (Python)
  std::uint32_t line = 0;
  std::string text;             // for people: "function (module+0x1a2b)"
  std::uint64_t live_bytes = 0; // a leak's site: GPU memory still allocated from there
  // A leak's site: which view ranked it: "allocator" (live tensor bytes, behind PyTorch's
  // caching allocator) or "driver" (the driver's allocations).
  std::string view;
};
// A leak notice names this many of the process's most likely leaking sites.
inline constexpr std::size_t kLeakNoticeSites = 3;
// The sites of an alert of `kind` about a process, for a notification made at `time_ns`: the one
// it points at first (a leak: its top allocation sites, at most kLeakNoticeSites); none if unknown.
using NoticeSiteLookup =
    std::function<std::vector<NoticeSite>(const ProcessId &, AlertKind, std::uint64_t time_ns)>;

// One notification that passed the gate; journal entries and /api/v1/alerts are made from it.
struct AlertNotice {
  AlertKind kind = AlertKind::memory_leak;
  ProcessId id;
  std::string comm;
  ContainerInfo container;
  std::uint64_t time_ns = 0;                               // CLOCK_MONOTONIC
  std::string summary;                                     // one line for people
  std::vector<std::pair<std::string, std::string>> fields; // upper-case journal fields
  std::vector<NoticeSite> sites; // the code it points at, first; empty if unknown
};

// A notice's words: a line for people and the journal fields.
struct NoticeText {
  std::string summary;
  std::vector<std::pair<std::string, std::string>> fields;
};

// A condition alert that holds now (leak, fragmentation, hang).
struct ActiveAlert {
  AlertKind kind = AlertKind::memory_leak;
  ProcessId id;
  std::uint64_t since_ns = 0;
};

class DetectorSet {
public:
  explicit DetectorSet(DetectorSettings settings);

  // One scan: `changes` are the memory changes since the last scan, `cpu_seconds` the user +
  // system time of each process (absent when /proc could not be read).
  // `headroom`: each process's GPU free memory as read before `changes` (NVML), where known.
  void scan(const CudaState &state, const std::map<ProcessId, std::vector<MemoryChange>> &changes,
            const std::map<ProcessId, double> &cpu_seconds, std::uint64_t now_ns,
            const std::map<ProcessId, DeviceHeadroom> &headroom = {});

  // Drops processes that exited; their owed notifications are suppressed.
  void forget(const std::vector<ProcessId> &exited);

  // Processes whose allocator view (docs/allocator-view.md) finds live tensor bytes rising, with
  // their growth in bytes/s, for the next scan: their leak is suspected.
  void set_allocator_leaks(std::map<ProcessId, double> leaks) {
    allocator_leaks_ = std::move(leaks);
  }
  // Names the code each notification points at (summary, TARGET_CODE_* fields).
  void set_site_lookup(NoticeSiteLookup lookup) { site_lookup_ = std::move(lookup); }
  // The live blocks a process's leak detector holds as high-water-mark samples.
  std::vector<std::uint64_t> leak_sample_addresses(const ProcessId &id) const;

  std::vector<AlertNotice> take_notices() { return std::exchange(notices_, {}); }
  const std::map<ProcessId, ProcessFindings> &findings() const { return findings_; }
  std::vector<ActiveAlert> active() const;
  // The last notifications, newest last, bounded.
  const std::deque<AlertNotice> &recent() const { return recent_; }
  const AlertGate &gate() const { return gate_; }

private:
  struct Detectors {
    LeakDetector leak;
    OomClassifier oom;
    HangDetector hang;
    std::map<AlertKind, std::uint64_t> active_since;
    std::optional<std::uint64_t> fragmentation_oom_ns; // last failure with that cause
    bool allocator_view_noticed = false; // this verdict of the allocator view was handled
    std::optional<std::uint64_t> allocator_notice_ns; // its last notice
  };
  // A leak confirmed by the allocator view is notified with its sites once per verdict (at
  // most once per cooldown), unless the condition's notice of this scan already did.
  void allocator_confirmation(const ProcessId &id, const ProcessFindings &findings,
                              Detectors &detectors, std::uint64_t now_ns, bool notified_now);
  void notify(const ProcessId &id, const ProcessFindings &findings, AlertKind kind,
              std::uint64_t now_ns, std::string summary,
              std::vector<std::pair<std::string, std::string>> fields);
  // `describe` builds the notice's text, only when the gate lets a notification out.
  void condition(const ProcessId &id, const ProcessFindings &findings, Detectors &detectors,
                 AlertKind kind, bool active, std::uint64_t now_ns,
                 NoticeText (*describe)(const ProcessFindings &));

  DetectorSettings settings_;
  AlertGate gate_;
  std::map<ProcessId, Detectors> detectors_;
  std::map<ProcessId, ProcessFindings> findings_;
  std::vector<AlertNotice> notices_;
  std::deque<AlertNotice> recent_;
  NoticeSiteLookup site_lookup_;
  std::map<ProcessId, double> allocator_leaks_;
};

inline constexpr std::size_t kRecentNotices = 100;

// Subject of a process in the alert gate: "pid/start ticks", unique across pid reuse.
std::string alert_subject(const ProcessId &id);

} // namespace neutracer
