// SPDX-License-Identifier: Apache-2.0
#pragma once
// Counts the driver's Xid reports by GPU and code, node-wide and per traced process. Memory is
// bounded: at most kMaxSeries (gpu, xid) pairs node-wide and per process (more are counted as
// xid="other"), and a process's counts go when it exits. Pure.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "common/process_id.h"
#include "kmsg/xid_line.h"

namespace neutracer {

struct XidEvent {
  XidReport report;
  std::string gpu;        // GpuAddressBook's label: an index or "unknown"
  std::uint64_t usec = 0; // kernel time of the report (microseconds since boot)
  std::string message;    // the kernel log line as written
};

class XidLedger {
public:
  using Key = std::pair<std::string, std::string>; // (gpu, xid)
  using Counts = std::map<Key, std::uint64_t>;
  static constexpr std::size_t kMaxSeries = 128;

  // Counts a report node-wide.
  void count(const XidEvent &event);
  // Counts a report against the traced process the driver named.
  void charge(const ProcessId &process, const XidEvent &event);
  // Drops the counts of processes not in `live`.
  void retain(const std::set<ProcessId> &live);

  const Counts &by_gpu() const { return by_gpu_; }
  const std::map<ProcessId, Counts> &by_process() const { return by_process_; }

private:
  static void add(Counts &counts, const XidEvent &event);

  Counts by_gpu_;
  std::map<ProcessId, Counts> by_process_;
};

} // namespace neutracer
