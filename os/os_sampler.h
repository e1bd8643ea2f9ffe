// SPDX-License-Identifier: Apache-2.0
#pragma once
// Per-process OS figures read from /proc (CPU time, memory, faults, threads, /proc IO). The
// reading is thin (through ProcFs, so tests use fixture trees); make_os_sample is pure.
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "common/procfs.h"
#include "os/os_proc_parsers.h"

namespace neutracer {

struct ProcessOsSample {
  std::uint64_t start_ticks = 0; // to tell a reused PID from the process the caller means
  double user_cpu_seconds = 0;
  double system_cpu_seconds = 0;
  std::uint64_t threads = 0;
  std::uint64_t resident_bytes = 0;
  std::uint64_t virtual_bytes = 0;
  std::uint64_t minor_faults = 0;
  std::uint64_t major_faults = 0;
  // From /proc/<pid>/status; nullopt when it was unreadable or lacked the lines.
  std::optional<std::uint64_t> voluntary_ctxt_switches;
  std::optional<std::uint64_t> involuntary_ctxt_switches;
  // /proc/<pid>/io; nullopt when unreadable (it needs ptrace access to the process) or malformed.
  std::optional<ProcIoCounters> io;
};

// Pure: ticks_per_second from sysconf(_SC_CLK_TCK), page_size from sysconf(_SC_PAGESIZE).
ProcessOsSample make_os_sample(const ProcStat &stat,
                               const std::optional<ProcStatusFields> &status,
                               const std::optional<ProcIoCounters> &io, long ticks_per_second,
                               long page_size);

// Reads <root>/<pid>/{stat,status,io} for each pid. A pid whose stat is unreadable (it exited)
// or malformed is left out; a missing status or io only leaves those fields empty.
std::map<int, ProcessOsSample> sample_processes(const ProcFs &procfs, const std::vector<int> &pids,
                                                long ticks_per_second, long page_size);

} // namespace neutracer
