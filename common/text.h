// SPDX-License-Identifier: Apache-2.0
#pragma once
// Small text helpers the parsers of /proc, HTTP headers, the config and the environment share.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace neutracer {

// `text` without leading and trailing `blanks` (spaces and tabs unless told).
inline std::string_view trim(std::string_view text, std::string_view blanks = " \t") {
  const auto first = text.find_first_not_of(blanks);
  if (first == std::string_view::npos)
    return {};
  return text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

// Whether `text` is one or more decimal digits.
inline bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// `text`, whole, as a number in `base`; nullopt when it is empty, holds anything else (a sign
// where T is unsigned, spaces, a "0x") or does not fit in T.
template <typename T> std::optional<T> parse_number(std::string_view text, int base = 10) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end != text.data() + text.size() || text.empty())
    return std::nullopt;
  return value;
}

// "0x1a2b": addresses and offsets as the tools that print them (gdb, /proc/<pid>/maps) do.
inline std::string hex_text(std::uint64_t value) {
  char digits[16];
  const auto end = std::to_chars(digits, digits + sizeof digits, value, 16).ptr;
  return "0x" + std::string(digits, end);
}

} // namespace neutracer
