// SPDX-License-Identifier: Apache-2.0
#pragma once
// The error a scan that ran out of file descriptors logs: EMFILE otherwise reads like processes
// exiting. It names the open file limit and what the traced processes need, at most once per
// interval (a scan runs every few seconds and the condition lasts until an operator acts), with a
// journal entry of its own (MESSAGE_ID in systemd/neutracerd.catalog), and a line when it ends.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/fd_budget.h"
#include "common/journal_writer.h"
#include "common/open_file_limit.h"

namespace neutracer {

struct FdLimitScan {
  std::uint64_t unread_processes = 0; // processes the scan could not read, kept as they were
  bool pids_unlisted = false;         // /proc itself could not be listed
  bool attach_failed = false;         // a driver file's probes could not be attached
  // Attaching new processes or driver files was put off to keep kReservedDescriptors free.
  bool attach_put_off = false;
  std::uint64_t exits_seen = 0; // /proc unlisted: traced processes seen gone all the same
  OpenFileLimit limit;
  FdBudgetInput traced;
};

std::string fd_limit_message(const FdLimitScan &scan);

inline constexpr std::string_view kFdLimitMessageId = "3092d46f9577420a823e124e7f54f810";
// The journal entry logged with `message` (fd_limit_message's text, as FdLimitWarning gave it).
JournalEntry fd_limit_journal_entry(const FdLimitScan &scan, const std::string &message);

class FdLimitWarning {
public:
  explicit FdLimitWarning(std::chrono::steady_clock::duration interval = std::chrono::minutes(1))
      : interval_(interval) {}

  // The message to log for this scan, or nullopt while the last one is recent; a message after
  // a quiet period says how many scans it stood for.
  std::optional<std::string> note(const FdLimitScan &scan,
                                  std::chrono::steady_clock::time_point now);
  // A scan that did not hit the limit: the line saying descriptors are back, once, after a
  // run of scans whose start was logged (flapping is not logged twice a scan).
  std::optional<std::string> clear();

private:
  std::chrono::steady_clock::duration interval_;
  std::optional<std::chrono::steady_clock::time_point> last_;
  std::uint64_t unlogged_scans_ = 0;
  std::uint64_t run_scans_ = 0; // scans at the limit since the last that was not
  bool run_logged_ = false;
};

} // namespace neutracer
