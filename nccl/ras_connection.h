// SPDX-License-Identifier: Apache-2.0
#pragma once
// A TCP connection to NCCL's RAS service (docs/nccl.md, "RAS"), shared by the status query and
// the event monitor. `address` is NCCL_RAS_ADDR's form, "host:port" or "[v6]:port", numeric
// (no name lookups: nothing here may block on DNS); "localhost" means the first of ::1 and
// 127.0.0.1 that answers, as NCCL binds either. Every wait ends at `deadline`.
#include <chrono>
#include <stop_token>
#include <string>
#include <string_view>

#include "common/unique_fd.h"

namespace neutracer {

using RasClock = std::chrono::steady_clock;

// A connected non-blocking socket; empty, with `error` set, when none. With `stop`, a connect
// under way gives up within 200 ms of a stop request.
UniqueFd connect_ras(const std::string &address, RasClock::time_point deadline, std::string &error,
                     const std::stop_token &stop = {});
// Sends all of `text`; false on an error or at the deadline.
bool send_all(int fd, std::string_view text, RasClock::time_point deadline);
// Waits for `events` (poll(2) bits) on `fd`; false at the deadline or on an error.
bool wait_for_socket(int fd, short events, RasClock::time_point deadline);

} // namespace neutracer
