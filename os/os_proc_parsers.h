// SPDX-License-Identifier: Apache-2.0
#pragma once
// Pure parsers for the /proc (and sysfs) text behind the per-process OS metrics. No I/O here.
// Each returns a value or says what was wrong with the text; none throws or crashes on bad input.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/proc_parsers.h"

namespace neutracer {

// A value, or why there is none.
template <typename T> struct Parsed {
  std::optional<T> value;
  std::string error; // empty when value is set
  explicit operator bool() const { return value.has_value(); }
  const T &operator*() const { return *value; }
  const T *operator->() const { return &*value; }
};

// /proc/<pid>/stat as the OS metrics need it: common's ProcStat with vsize and rss (fields 23
// and 24) present. comm (field 2) may hold spaces and parentheses.
Parsed<ProcStat> parse_process_stat(std::string_view text);

// /proc/<pid>/io. read_bytes/write_bytes are storage-layer bytes: write_bytes counts when pages
// are dirtied (not when written back), and cancelled_write_bytes undoes truncated dirty pages.
// rchar/wchar and syscr/syscw count read/write-family calls, cache hits and pipes included.
struct ProcIoCounters {
  std::uint64_t rchar = 0;
  std::uint64_t wchar = 0;
  std::uint64_t syscr = 0;
  std::uint64_t syscw = 0;
  std::uint64_t read_bytes = 0;
  std::uint64_t write_bytes = 0;
  std::uint64_t cancelled_write_bytes = 0;
  bool operator==(const ProcIoCounters &) const = default;
};

// Needs all of rchar, wchar, syscr, syscw, read_bytes, write_bytes; cancelled_write_bytes is
// optional. Unknown keys are ignored (newer kernels may add some).
Parsed<ProcIoCounters> parse_proc_io(std::string_view text);

// The /proc/<pid>/status lines the OS metrics use. Kernel threads have no Vm* lines.
struct ProcStatusFields {
  std::optional<std::uint64_t> vm_rss_bytes;
  std::optional<std::uint64_t> vm_size_bytes;
  std::uint64_t threads = 0;
  std::optional<std::uint64_t> voluntary_ctxt_switches;
  std::optional<std::uint64_t> nonvoluntary_ctxt_switches;
};

// Needs a Threads line; a known line with a malformed value is an error.
Parsed<ProcStatusFields> parse_proc_status(std::string_view text);

// A sysfs CPU list ("0-3,8,10-11\n"), e.g. /sys/devices/system/node/node0/cpulist. An empty
// list is valid (a memory-only node). CPUs >= 65536 are rejected as implausible.
Parsed<std::vector<std::uint32_t>> parse_cpu_list(std::string_view text);

} // namespace neutracer
