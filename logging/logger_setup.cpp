// SPDX-License-Identifier: Apache-2.0
#include "logging/logger_setup.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/sinks/systemd_sink.h>
#include <spdlog/spdlog.h>

#include <iostream>
#include <memory>
#include <string>

#include "logging/journal_stream.h"
#include "logging/log_line_formatter.h"

namespace neutracer {

LogDestination install_logger(LogFormat format, std::string_view level) {
  const bool journal = stderr_is_journal_stream();
  std::shared_ptr<spdlog::logger> logger;
  if (journal) {
    // SYSLOG_IDENTIFIER=neutracerd; MESSAGE is the bare text: the journal keeps time and level.
    logger = spdlog::systemd_logger_mt("neutracerd", "neutracerd");
  } else {
    logger = spdlog::stderr_logger_mt("neutracerd");
    logger->set_formatter(std::make_unique<LogLineFormatter>(format));
  }
  logger->set_level(spdlog::level::from_str(std::string(level)));
  // Warnings and errors reach the journal or the terminal at once, even if the daemon dies.
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  return journal ? LogDestination::journal : LogDestination::stderr_lines;
}

void report_startup_error(std::string_view message) {
  std::cerr << (stderr_is_journal_stream() ? "<3>" : "") << "neutracerd: " << message << "\n";
}

} // namespace neutracer
