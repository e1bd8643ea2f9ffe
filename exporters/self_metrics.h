// SPDX-License-Identifier: Apache-2.0
#pragma once
// The daemon's own process_* metrics (client_golang naming). Parsing is pure and testable on
// literal text; self_process_families() is the thin part that reads /proc.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "exposition/exposition.h"

namespace neutracer {

struct SelfProcessStats {
  double cpu_seconds = 0;
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double open_fds = 0;
  double max_fds = 0;
  double start_time_seconds = 0;
  double threads = 0;
};

// Pure: parses /proc/<pid>/stat text (comm may contain spaces and ')', so fields are located
// after the LAST ')'). ticks_per_second from sysconf(_SC_CLK_TCK), page_size from sysconf,
// boot_time_seconds is the btime line of /proc/stat. Fills cpu_seconds, resident_bytes,
// virtual_bytes, start_time_seconds and threads; open_fds/max_fds stay 0.
std::optional<SelfProcessStats> parse_self_stat(std::string_view stat_text, long ticks_per_second,
                                                long page_size, double boot_time_seconds);

// The "btime N" line of /proc/stat.
std::optional<double> parse_boot_time(std::string_view proc_stat_text);

// The soft limit of the "Max open files  soft hard files" line of /proc/<pid>/limits;
// nullopt when absent or "unlimited" (the metric is then omitted).
std::optional<double> parse_max_open_files(std::string_view limits_text);

// Thin: reads <proc_root>/self/{stat,limits,fd} and <proc_root>/stat; returns
// process_cpu_seconds_total (counter), process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_max_fds, process_start_time_seconds
// and process_threads (gauges). Missing files omit the families they feed; never throws.
std::vector<MetricFamily> self_process_families(const std::string &proc_root = "/proc");

} // namespace neutracer
