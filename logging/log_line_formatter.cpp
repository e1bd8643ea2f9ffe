// SPDX-License-Identifier: Apache-2.0
#include "logging/log_line_formatter.h"

#include <spdlog/details/log_msg.h>

namespace neutracer {

std::string_view log_level_name(spdlog::level::level_enum level) {
  switch (level) {
  case spdlog::level::trace:
    return "trace";
  case spdlog::level::debug:
    return "debug";
  case spdlog::level::info:
    return "info";
  case spdlog::level::warn:
    return "warn";
  case spdlog::level::err:
    return "error";
  case spdlog::level::critical:
    return "critical";
  default:
    return "off";
  }
}

void LogLineFormatter::format(const spdlog::details::log_msg &message,
                              spdlog::memory_buf_t &dest) {
  const std::string line = format_log_line(
      format_, LogRecord{message.time, log_level_name(message.level),
                         std::string_view(message.payload.data(), message.payload.size())});
  dest.append(line.data(), line.data() + line.size());
}

std::unique_ptr<spdlog::formatter> LogLineFormatter::clone() const {
  return std::make_unique<LogLineFormatter>(format_);
}

} // namespace neutracer
