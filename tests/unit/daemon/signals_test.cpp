// SPDX-License-Identifier: Apache-2.0
// The daemon's signal handlers. Each case runs in a child process (EXPECT_EXIT): handlers are
// process-wide, and a SIGHUP without one kills whoever receives it.
#include "daemon/signals.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

namespace neutracer {
namespace {

void log_to_stderr() { spdlog::set_default_logger(spdlog::stderr_logger_st("signals_test")); }

TEST(SignalsDeathTest, HangupIsLoggedAndDoesNotStopTheDaemon) {
  EXPECT_EXIT(
      {
        log_to_stderr();
        install_signal_handlers();
        ::kill(::getpid(), SIGHUP);
        ::kill(::getpid(), SIGHUP);
        const bool reported_both = report_hangups() == 2;
        const bool reported_once = report_hangups() == 0;
        std::exit(reported_both && reported_once && !stop_requested().load() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "SIGHUP ignored \\(received 2\\): neutracerd does not reload");
}

TEST(SignalsDeathTest, TermAndIntRequestAStop) {
  for (const int signal : {SIGTERM, SIGINT})
    EXPECT_EXIT(
        {
          install_signal_handlers();
          ::kill(::getpid(), signal);
          std::exit(stop_requested().load() && report_hangups() == 0 ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
}

TEST(SignalsDeathTest, BrokenPipeIsIgnored) {
  EXPECT_EXIT(
      {
        install_signal_handlers();
        ::kill(::getpid(), SIGPIPE);
        std::exit(stop_requested().load() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

} // namespace
} // namespace neutracer
