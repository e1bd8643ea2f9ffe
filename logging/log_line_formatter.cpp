// SPDX-License-Identifier: Apache-2.0
#include "logging/log_line_formatter.h"

#include <array>
#include <cstddef>
#include <spdlog/details/log_msg.h>

namespace neutracer {
namespace {

// Indexed by spdlog's level (trace 0 to off 6), spelled as --log.level takes them: "warn"
// where spdlog's own name is "warning".
constexpr std::array<std::string_view, 7> kLevelNames = {"trace", "debug",    "info", "warn",
                                                         "error", "critical", "off"};
static_assert(kLevelNames.size() == spdlog::level::n_levels);

} // namespace

std::string_view log_level_name(spdlog::level::level_enum level) {
  const auto index = static_cast<std::size_t>(level);
  return index < kLevelNames.size() ? kLevelNames[index] : "off";
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
