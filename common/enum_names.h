// SPDX-License-Identifier: Apache-2.0
#pragma once
// Names of an enum's values, for enums numbered 0, 1, 2... in declaration order: one array of
// names per enum, written in that order, with a static_assert beside it tying its size to the
// enum's last value.
#include <array>
#include <cstddef>
#include <string_view>

namespace neutracer {

template <typename Enum, std::size_t N>
constexpr std::string_view enum_name(Enum value, const std::array<std::string_view, N> &names) {
  const auto index = static_cast<std::size_t>(value);
  return index < N ? names[index] : names.front();
}

// The number of values of an enum whose last value is `last`.
template <typename Enum> constexpr std::size_t enum_count(Enum last) {
  return static_cast<std::size_t>(last) + 1;
}

} // namespace neutracer
