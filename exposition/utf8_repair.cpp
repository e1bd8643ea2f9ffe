// SPDX-License-Identifier: Apache-2.0
#include "exposition/utf8_repair.h"

#include <cstdint>

namespace neutracer {

std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  if (lead < 0x80)
    return 1;
  std::size_t length = 0;
  std::uint32_t code = 0;
  if (lead >= 0xc2 && lead <= 0xdf)
    length = 2, code = lead & 0x1fu;
  else if (lead >= 0xe0 && lead <= 0xef)
    length = 3, code = lead & 0x0fu;
  else if (lead >= 0xf0 && lead <= 0xf4)
    length = 4, code = lead & 0x07u;
  else
    return 0; // a continuation byte, 0xc0/0xc1 (always overlong) or 0xf5.. (above U+10FFFF)
  if (text.size() - at < length)
    return 0;
  for (std::size_t i = 1; i < length; ++i) {
    const auto next = static_cast<unsigned char>(text[at + i]);
    if ((next & 0xc0) != 0x80)
      return 0;
    code = (code << 6) | (next & 0x3fu);
  }
  constexpr std::uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kSmallest[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
    return 0;
  return length;
}

bool is_valid_utf8(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    const auto length = utf8_sequence_length(text, at);
    if (length == 0)
      return false;
    at += length;
  }
  return true;
}

std::string repair_utf8(std::string_view text) {
  std::string repaired;
  repaired.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const auto length = utf8_sequence_length(text, at);
    if (length == 0) {
      repaired += "\xef\xbf\xbd"; // U+FFFD REPLACEMENT CHARACTER
      ++at;
    } else {
      repaired.append(text.substr(at, length));
      at += length;
    }
  }
  return repaired;
}

std::string_view as_valid_utf8(std::string_view text, std::string &storage) {
  if (is_valid_utf8(text))
    return text;
  storage = repair_utf8(text);
  return storage;
}

} // namespace neutracer
