// SPDX-License-Identifier: Apache-2.0
#include "os/os_sampler.h"

#include <algorithm>
#include <spdlog/spdlog.h>

namespace neutracer {

ProcessOsSample make_os_sample(const ProcStat &stat,
                               const std::optional<ProcStatusFields> &status,
                               const std::optional<ProcIoCounters> &io, long ticks_per_second,
                               long page_size) {
  const double ticks = static_cast<double>(std::max(1L, ticks_per_second));
  ProcessOsSample sample;
  sample.start_ticks = stat.start_ticks;
  sample.user_cpu_seconds = static_cast<double>(stat.utime_ticks) / ticks;
  sample.system_cpu_seconds = static_cast<double>(stat.stime_ticks) / ticks;
  sample.threads = stat.num_threads;
  sample.resident_bytes =
      stat.rss_pages.value_or(0) * static_cast<std::uint64_t>(std::max(0L, page_size));
  sample.virtual_bytes = stat.vsize_bytes.value_or(0);
  sample.minor_faults = stat.minor_faults;
  sample.major_faults = stat.major_faults;
  if (status) {
    sample.voluntary_ctxt_switches = status->voluntary_ctxt_switches;
    sample.involuntary_ctxt_switches = status->nonvoluntary_ctxt_switches;
  }
  sample.io = io;
  return sample;
}

std::map<int, ProcessOsSample> sample_processes(const ProcFs &procfs, const std::vector<int> &pids,
                                                long ticks_per_second, long page_size) {
  std::map<int, ProcessOsSample> samples;
  for (const int pid : pids) {
    const auto stat_text = procfs.read(pid, "stat");
    if (!stat_text)
      continue; // exited
    const auto stat = parse_process_stat(*stat_text);
    if (!stat) {
      spdlog::debug("pid {}: {}", pid, stat.error);
      continue;
    }
    std::optional<ProcStatusFields> status;
    if (const auto text = procfs.read(pid, "status")) {
      auto parsed = parse_proc_status(*text);
      if (parsed)
        status = std::move(parsed.value);
      else
        spdlog::debug("pid {}: {}", pid, parsed.error);
    }
    std::optional<ProcIoCounters> io;
    // Without ptrace access the open or the read fails; an empty read parses as malformed.
    if (const auto text = procfs.read(pid, "io")) {
      auto parsed = parse_proc_io(*text);
      if (parsed)
        io = parsed.value;
      else
        spdlog::debug("pid {}: {}", pid, parsed.error);
    }
    samples.emplace(pid, make_os_sample(*stat, status, io, ticks_per_second, page_size));
  }
  return samples;
}

} // namespace neutracer
