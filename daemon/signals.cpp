// SPDX-License-Identifier: Apache-2.0
#include "daemon/signals.h"

#include <csignal>
#include <spdlog/spdlog.h>

namespace neutracer {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<std::uint32_t> g_hangups{0};
static_assert(std::atomic<bool>::is_always_lock_free &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "signal handlers may only touch lock-free atomics");

void on_stop(int) { g_stop.store(true); }
void on_hangup(int) { g_hangups.fetch_add(1); }

void handle(int signal, void (*handler)(int)) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART; // a signal must not fail a read or a poll half way
  ::sigaction(signal, &action, nullptr);
}

} // namespace

void install_signal_handlers() {
  handle(SIGTERM, on_stop);
  handle(SIGINT, on_stop);
  handle(SIGHUP, on_hangup);
  handle(SIGPIPE, SIG_IGN);
}

const std::atomic<bool> &stop_requested() { return g_stop; }

std::uint32_t report_hangups() {
  const std::uint32_t count = g_hangups.exchange(0);
  if (count > 0)
    spdlog::warn("SIGHUP ignored (received {}): neutracerd does not reload its configuration; "
                 "restart it to apply a change",
                 count);
  return count;
}

} // namespace neutracer
