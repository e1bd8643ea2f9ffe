// SPDX-License-Identifier: Apache-2.0
#include "kmsg/kmsg_record.h"

#include <charconv>

namespace neutracer {
namespace {

template <typename T> std::optional<T> decimal(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || text.empty())
    return std::nullopt;
  return value;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

} // namespace

std::string unescape_kmsg(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] == 'x') {
      const int high = hex_digit(text[i + 2]);
      const int low = hex_digit(text[i + 3]);
      if (high >= 0 && low >= 0) {
        out.push_back(static_cast<char>(high * 16 + low));
        i += 3;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::optional<KmsgRecord> parse_kmsg_record(std::string_view record) {
  // The message ends at the first newline; dictionary lines follow.
  const auto line_end = record.find('\n');
  const auto line = record.substr(0, line_end);
  const auto semicolon = line.find(';');
  if (semicolon == std::string_view::npos)
    return std::nullopt;
  auto header = line.substr(0, semicolon);
  std::string_view fields[3];
  for (auto &field : fields) {
    const auto comma = header.find(',');
    if (comma == std::string_view::npos)
      return std::nullopt; // FLAGS (and maybe more) must follow USEC
    field = header.substr(0, comma);
    header.remove_prefix(comma + 1);
  }
  const auto prio = decimal<unsigned>(fields[0]);
  const auto seq = decimal<std::uint64_t>(fields[1]);
  const auto usec = decimal<std::uint64_t>(fields[2]);
  if (!prio || !seq || !usec)
    return std::nullopt;
  KmsgRecord out;
  out.level = static_cast<int>(*prio & 7u);
  out.facility = static_cast<int>(*prio >> 3);
  out.seq = *seq;
  out.usec = *usec;
  out.message = unescape_kmsg(line.substr(semicolon + 1));
  return out;
}

} // namespace neutracer
