// SPDX-License-Identifier: Apache-2.0
#pragma once
// The error a scan that ran out of file descriptors logs: EMFILE otherwise reads like processes
// exiting. It names the open file limit and what the traced processes need, at most once per
// interval (a scan runs every few seconds and the condition lasts until an operator acts).
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "collectors/fd_budget.h"
#include "common/open_file_limit.h"

namespace neutracer {

struct FdLimitScan {
  std::uint64_t unread_processes = 0; // processes the scan could not read, kept as they were
  bool pids_unlisted = false;         // /proc itself could not be listed
  bool attach_failed = false;         // a driver file's probes could not be attached
  OpenFileLimit limit;
  FdBudgetInput traced;
};

std::string fd_limit_message(const FdLimitScan &scan);

class FdLimitWarning {
public:
  explicit FdLimitWarning(std::chrono::steady_clock::duration interval = std::chrono::minutes(1))
      : interval_(interval) {}

  // The message to log for this scan, or nullopt while the last one is recent; a message after
  // a quiet period says how many scans it stood for.
  std::optional<std::string> note(const FdLimitScan &scan,
                                  std::chrono::steady_clock::time_point now);

private:
  std::chrono::steady_clock::duration interval_;
  std::optional<std::chrono::steady_clock::time_point> last_;
  std::uint64_t unlogged_scans_ = 0;
};

} // namespace neutracer
