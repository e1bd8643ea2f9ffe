// SPDX-License-Identifier: Apache-2.0
#pragma once
// An independent reader of Prometheus text format 0.0.4 for fuzz invariants: checks that every
// line is a HELP, TYPE or sample line and that the text is valid UTF-8 (Prometheus refuses a
// whole scrape over one bad label value), and returns the unescaped label values it read.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tests/fuzz/fuzz_check.h"

namespace neutracer::fuzz {

// RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF.
inline bool is_valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = 0;
    std::uint32_t code = 0;
    if (lead < 0x80) {
      ++i;
      continue;
    } else if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2, code = lead & 0x1fu;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3, code = lead & 0x0fu;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4, code = lead & 0x07u;
    } else {
      return false;
    }
    if (i + length > text.size())
      return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80)
        return false;
      code = (code << 6) | (next & 0x3fu);
    }
    const std::uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < smallest[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
      return false;
    i += length;
  }
  return true;
}

inline bool is_name_char(char c, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         (!first && c >= '0' && c <= '9');
}

// Reads one `{name="value",...}` block at `line[at]`; appends unescaped values; returns the
// index after '}'.
inline std::size_t read_labels(std::string_view line, std::size_t at,
                               std::vector<std::string> &values) {
  require(line[at] == '{', "labels open with '{'");
  ++at;
  while (true) {
    const std::size_t name_start = at;
    while (at < line.size() && is_name_char(line[at], at == name_start))
      ++at;
    require(at > name_start, "a label name");
    require(line.substr(at, 2) == "=\"", "label name followed by =\"");
    at += 2;
    std::string value;
    while (true) {
      require(at < line.size(), "label value closed on its line");
      const char c = line[at++];
      if (c == '"')
        break;
      if (c != '\\') {
        value += c;
        continue;
      }
      require(at < line.size(), "escape completed");
      const char escaped = line[at++];
      require(escaped == '\\' || escaped == '"' || escaped == 'n', "only \\\\, \\\" and \\n");
      value += escaped == 'n' ? '\n' : escaped;
    }
    values.push_back(std::move(value));
    require(at < line.size(), "labels closed");
    if (line[at] == '}')
      return at + 1;
    require(line[at] == ',', "labels separated by ','");
    ++at;
  }
}

// Checks the whole exposition; returns every label value in order, unescaped.
inline std::vector<std::string> require_well_formed_exposition(std::string_view text) {
  require(is_valid_utf8(text), "the exposition is valid UTF-8");
  require(text.empty() || text.back() == '\n', "the exposition ends with a newline");
  std::vector<std::string> values;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(end + 1);
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE "))
      continue;
    std::size_t at = 0;
    while (at < line.size() && is_name_char(line[at], at == 0))
      ++at;
    require(at > 0, "a sample line starts with a metric name");
    if (at < line.size() && line[at] == '{')
      at = read_labels(line, at, values);
    require(at < line.size() && line[at] == ' ', "a space before the value");
    const std::string_view value = line.substr(at + 1);
    require(!value.empty() && value.find(' ') == std::string_view::npos,
            "one value and no timestamp");
  }
  return values;
}

} // namespace neutracer::fuzz
