// SPDX-License-Identifier: Apache-2.0
#include "kmsg/kmsg_record.h"

#include "common/text.h"

namespace neutracer {

std::string unescape_kmsg(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() && text[i + 1] == 'x') {
      if (const auto byte = parse_number<unsigned char>(text.substr(i + 2, 2), 16)) {
        out.push_back(static_cast<char>(*byte));
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
  const auto prio = parse_number<unsigned>(fields[0]);
  const auto seq = parse_number<std::uint64_t>(fields[1]);
  const auto usec = parse_number<std::uint64_t>(fields[2]);
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
