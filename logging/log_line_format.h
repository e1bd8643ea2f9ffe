// SPDX-License-Identifier: Apache-2.0
#pragma once
// One log record as a line in the formats Prometheus exporters write (--log.format): logfmt,
// as the Go exporters' default, or one JSON object per line. Pure.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace neutracer {

enum class LogFormat { logfmt, json };

// "logfmt" or "json"; nullopt for anything else.
std::optional<LogFormat> parse_log_format(std::string_view name);

struct LogRecord {
  std::chrono::system_clock::time_point time;
  std::string_view level;   // "debug", "info", "warn", "error", ...
  std::string_view message; // any bytes: messages quote kernel names and process names
};

// `ts=2026-11-26T08:41:53.123Z level=info msg="scan took 3 ms"` or
// `{"ts":"2026-11-26T08:41:53.123Z","level":"info","msg":"scan took 3 ms"}`, with a final
// newline. Control characters are escaped and invalid UTF-8 becomes U+FFFD, so one record is
// always one parseable line whatever the message holds.
std::string format_log_line(LogFormat format, const LogRecord &record);

// RFC 3339 in UTC with milliseconds: 2026-11-26T08:41:53.123Z.
std::string rfc3339_utc_millis(std::chrono::system_clock::time_point time);

} // namespace neutracer
