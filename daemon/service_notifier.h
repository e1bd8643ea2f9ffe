// SPDX-License-Identifier: Apache-2.0
#pragma once
// systemd notifications (READY, WATCHDOG, STOPPING, STATUS). No-ops outside systemd.
#include <chrono>
#include <optional>
#include <string>

namespace neutracer {

class ServiceNotifier {
public:
  void ready(const std::string &status);
  void stopping();
  void status(const std::string &status);
  // Pings the watchdog if systemd asked for one and half its interval has passed.
  void watchdog_ping();

private:
  std::optional<std::chrono::steady_clock::duration> watchdog_interval() const;
  std::chrono::steady_clock::time_point last_ping_{};
};

} // namespace neutracer
