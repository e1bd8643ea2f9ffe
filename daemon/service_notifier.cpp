// SPDX-License-Identifier: Apache-2.0
#include "daemon/service_notifier.h"

#include <systemd/sd-daemon.h>

namespace neutracer {

void ServiceNotifier::ready(const std::string &status) {
  sd_notify(0, ("READY=1\nSTATUS=" + status).c_str());
}

void ServiceNotifier::stopping() { sd_notify(0, "STOPPING=1\nSTATUS=stopping"); }

void ServiceNotifier::status(const std::string &status) {
  sd_notify(0, ("STATUS=" + status).c_str());
}

std::optional<std::chrono::steady_clock::duration> ServiceNotifier::watchdog_interval() const {
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0)
    return std::nullopt;
  return std::chrono::microseconds(usec / 2);
}

void ServiceNotifier::watchdog_ping() {
  const auto interval = watchdog_interval();
  if (!interval)
    return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ping_ < *interval)
    return;
  sd_notify(0, "WATCHDOG=1");
  last_ping_ = now;
}

} // namespace neutracer
