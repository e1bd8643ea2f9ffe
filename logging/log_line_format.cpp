// SPDX-License-Identifier: Apache-2.0
#include "logging/log_line_format.h"

#include <cstdio>
#include <ctime>
#include <string_view>
#include <utility>

#include "exposition/utf8_repair.h"

namespace neutracer {
namespace {

void append_hex_escape(std::string &out, unsigned char byte) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\u00";
  out += kHex[byte >> 4];
  out += kHex[byte & 0xF];
}

// The body of a double-quoted string, escaped as JSON does it; go-logfmt quotes the same way.
void append_escaped(std::string &out, std::string_view text) {
  std::string storage;
  for (const char c : as_valid_utf8(text, storage)) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (byte < 0x20 || byte == 0x7F)
        append_hex_escape(out, byte);
      else
        out += c;
    }
  }
}

// logfmt leaves a value bare only when it holds no space, '=', '"', control or non-ASCII byte.
bool needs_quotes(std::string_view value) {
  if (value.empty())
    return true;
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= ' ' || byte >= 0x7F || c == '=' || c == '"' || c == '\\')
      return true;
  }
  return false;
}

void append_logfmt_value(std::string &out, std::string_view value) {
  if (!needs_quotes(value)) {
    out += value;
    return;
  }
  out += '"';
  append_escaped(out, value);
  out += '"';
}

void append_json_string(std::string &out, std::string_view value) {
  out += '"';
  append_escaped(out, value);
  out += '"';
}

} // namespace

std::optional<LogFormat> parse_log_format(std::string_view name) {
  if (name == "logfmt")
    return LogFormat::logfmt;
  if (name == "json")
    return LogFormat::json;
  return std::nullopt;
}

std::string rfc3339_utc_millis(std::chrono::system_clock::time_point time) {
  using namespace std::chrono;
  const auto since_epoch = duration_cast<milliseconds>(time.time_since_epoch());
  auto seconds = duration_cast<std::chrono::seconds>(since_epoch);
  auto millis = since_epoch - seconds;
  if (millis.count() < 0) { // before 1970: keep the millisecond field positive
    seconds -= std::chrono::seconds(1);
    millis += std::chrono::seconds(1);
  }
  const std::time_t whole = static_cast<std::time_t>(seconds.count());
  std::tm utc{};
  gmtime_r(&whole, &utc);
  char text[96]; // room for any int in each field, as -Wformat-truncation asks
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(millis.count()));
  return text;
}

std::string format_log_line(LogFormat format, const LogRecord &record) {
  const std::string ts = rfc3339_utc_millis(record.time);
  const std::pair<std::string_view, std::string_view> fields[] = {
      {"ts", ts}, {"level", record.level}, {"msg", record.message}};
  const bool json = format == LogFormat::json;
  std::string line;
  line.reserve(record.message.size() + 64);
  line += json ? "{" : "";
  for (const auto &[name, value] : fields) {
    if (name != fields[0].first)
      line += json ? ',' : ' ';
    if (json) {
      append_json_string(line, name);
      line += ':';
      append_json_string(line, value);
    } else {
      line += name;
      line += '=';
      append_logfmt_value(line, value);
    }
  }
  line += json ? "}\n" : "\n";
  return line;
}

} // namespace neutracer
