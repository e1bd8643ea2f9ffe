// SPDX-License-Identifier: Apache-2.0
#include "http/base64.h"

#include <cstdint>

namespace neutracer {
namespace {

// The 6-bit value of a base64 character, or -1.
int sextet(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

} // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  if (text.size() % 4 != 0)
    return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t at = 0; at < text.size(); at += 4) {
    const std::string_view group = text.substr(at, 4);
    const bool last_group = at + 4 == text.size();
    // Padding only at the end: "xx==" carries one byte, "xxx=" two.
    std::size_t padding = 0;
    if (last_group && group[3] == '=')
      padding = group[2] == '=' ? 2 : 1;
    std::uint32_t bits = 0;
    for (std::size_t i = 0; i < 4 - padding; ++i) {
      const int value = sextet(group[i]);
      if (value < 0)
        return std::nullopt;
      bits = bits << 6 | static_cast<std::uint32_t>(value);
    }
    bits <<= 6 * padding;
    // Bits that the padding drops must be zero, or two texts would decode to the same bytes.
    if ((padding == 1 && (bits & 0xffu) != 0) || (padding == 2 && (bits & 0xffffu) != 0))
      return std::nullopt;
    out.push_back(static_cast<char>(bits >> 16 & 0xffu));
    if (padding < 2)
      out.push_back(static_cast<char>(bits >> 8 & 0xffu));
    if (padding < 1)
      out.push_back(static_cast<char>(bits & 0xffu));
  }
  return out;
}

} // namespace neutracer
