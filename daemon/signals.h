// SPDX-License-Identifier: Apache-2.0
#pragma once
// The signals the daemon answers (docs/operations.md, "Signals"). SIGTERM and SIGINT stop it.
// SIGHUP is logged and otherwise ignored: its default action ended the daemon at once with no
// log line, and systemd's Restart=on-failure counts a SIGHUP death as a clean exit, so the node
// stopped being monitored unnoticed (issue 20). Nothing is reloaded: a restart applies a new
// config.
#include <atomic>
#include <cstdint>

namespace neutracer {

// Installs the handlers (SIGTERM, SIGINT, SIGHUP) and ignores SIGPIPE. Handlers only touch
// lock-free atomics; reporting happens later, on the main loop's thread.
void install_signal_handlers();

// Set by SIGTERM or SIGINT.
const std::atomic<bool> &stop_requested();

// Logs one warning when SIGHUPs arrived since the last call, and returns how many did.
std::uint32_t report_hangups();

} // namespace neutracer
