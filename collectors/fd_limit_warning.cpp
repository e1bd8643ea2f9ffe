// SPDX-License-Identifier: Apache-2.0
#include "collectors/fd_limit_warning.h"

#include <sys/resource.h>
#include <utility>

#include "common/descriptor_reserve.h"

namespace neutracer {
namespace {

std::string limit_text(std::uint64_t value) {
  return value == RLIM_INFINITY ? std::string("unlimited") : std::to_string(value);
}

} // namespace

std::string fd_limit_message(const FdLimitScan &scan) {
  std::string what;
  if (scan.pids_unlisted)
    what = "/proc could not be listed: every traced process is kept as it was";
  else if (scan.unread_processes > 0)
    what = std::to_string(scan.unread_processes) +
           " processes could not be read and are kept as they were (not reported as exited)";
  else if (!scan.attach_failed)
    what = "some files of traced processes could not be read";
  if (scan.attach_failed)
    what += std::string(what.empty() ? "" : "; ") +
            "driver probes could not be attached (retried at the next scan)";
  if (scan.attach_put_off)
    what += std::string(what.empty() ? "" : "; ") +
            "new processes and driver files are not attached until descriptors free up (" +
            std::to_string(kReservedDescriptors) + " kept free for the scan and /metrics)";
  if (scan.exits_seen > 0)
    what += "; " + std::to_string(scan.exits_seen) +
            " traced processes were seen to exit all the same (their /proc folder is gone)";
  const auto &t = scan.traced;
  const auto per_process =
      kDescriptorsPerProcess + (t.per_process_launch_probes ? kLaunchLinksPerProcessAndLibrary : 0);
  return "out of file descriptors (RLIMIT_NOFILE soft " + limit_text(scan.limit.soft) + ", hard " +
         limit_text(scan.limit.hard) + "): " + what + ". Tracing " + std::to_string(t.processes) +
         " processes on " + std::to_string(t.libraries) + " driver files needs about " +
         std::to_string(descriptors_needed(t)) + " = " + std::to_string(kFixedDescriptors) + " + " +
         std::to_string(kReservedDescriptors) + " kept free + web.max_connections " +
         std::to_string(t.max_connections) + " + " +
         std::to_string(kHttpDescriptorsBeyondConnections) + " + " +
         std::to_string(kDescriptorsPerProbe) + " x " + std::to_string(t.system_wide_probes) +
         " probes" + (t.per_process_launch_probes ? " + " + std::to_string(t.libraries) : "") +
         " + " + std::to_string(per_process) + " per process, and more for processes not read: " +
         "raise LimitNOFILE (docs/operations.md, \"Open file limit\")";
}

JournalEntry fd_limit_journal_entry(const FdLimitScan &scan, const std::string &message) {
  JournalEntry entry;
  entry.message_id = std::string(kFdLimitMessageId);
  entry.priority = 3;
  entry.message = "neutracerd " + message;
  entry.fields = {{"RLIMIT_NOFILE_SOFT", limit_text(scan.limit.soft)},
                  {"RLIMIT_NOFILE_HARD", limit_text(scan.limit.hard)},
                  {"DESCRIPTORS_NEEDED", std::to_string(descriptors_needed(scan.traced))},
                  {"TRACED_PROCESSES", std::to_string(scan.traced.processes)},
                  {"UNREAD_PROCESSES", std::to_string(scan.unread_processes)},
                  {"PROC_UNLISTED", scan.pids_unlisted ? "1" : "0"},
                  {"ATTACH_PUT_OFF", scan.attach_put_off || scan.attach_failed ? "1" : "0"}};
  return entry;
}

std::optional<std::string> FdLimitWarning::note(const FdLimitScan &scan,
                                                std::chrono::steady_clock::time_point now) {
  ++run_scans_;
  if (last_ && now - *last_ < interval_) {
    ++unlogged_scans_;
    return std::nullopt;
  }
  run_logged_ = true;
  auto message = fd_limit_message(scan);
  if (unlogged_scans_ > 0)
    message += " (" + std::to_string(unlogged_scans_ + 1) + " scans hit the limit since the last " +
               "message)";
  last_ = now;
  unlogged_scans_ = 0;
  return message;
}

std::optional<std::string> FdLimitWarning::clear() {
  const auto scans = std::exchange(run_scans_, 0);
  if (!std::exchange(run_logged_, false))
    return std::nullopt;
  return "file descriptors available again after " + std::to_string(scans) +
         " scans at the limit: every process is read and attached again";
}

} // namespace neutracer
