// SPDX-License-Identifier: Apache-2.0
#include "pystacks/line_table.h"

#include <climits>
#include <cstddef>

namespace neutracer {
namespace {

// Lines stay within int; a table that walks them outside is garbage, not a program.
bool valid_line(std::int64_t line) { return line >= 0 && line <= INT_MAX; }

std::optional<int> lnotab_line(std::span<const std::uint8_t> table, int first_line,
                               std::int64_t offset) {
  std::int64_t line = first_line;
  std::int64_t address = 0;
  for (std::size_t i = 0; i + 1 < table.size(); i += 2) {
    address += table[i];
    if (address > offset)
      break;
    line += static_cast<std::int8_t>(table[i + 1]);
  }
  return valid_line(line) ? std::optional<int>(static_cast<int>(line)) : std::nullopt;
}

std::optional<int> linetable310_line(std::span<const std::uint8_t> table, int first_line,
                                     std::int64_t offset) {
  constexpr std::int8_t kNoLine = -128;
  std::int64_t line = first_line;
  std::int64_t start = 0;
  for (std::size_t i = 0; i + 1 < table.size(); i += 2) {
    const std::int64_t end = start + table[i];
    const auto delta = static_cast<std::int8_t>(table[i + 1]);
    if (delta != kNoLine)
      line += delta;
    if (start <= offset && offset < end) {
      if (delta == kNoLine || !valid_line(line))
        return std::nullopt;
      return static_cast<int>(line);
    }
    start = end;
  }
  return std::nullopt;
}

// Reads the location table's variable-length numbers: 6 bits a byte, least significant first,
// bit 6 set while more follow. Entry starts have bit 7 set, so a number never runs into one.
class LocationReader {
public:
  explicit LocationReader(std::span<const std::uint8_t> table) : table_(table) {}

  bool at_end() const { return position_ >= table_.size(); }
  std::optional<std::uint8_t> byte() {
    if (at_end())
      return std::nullopt;
    return table_[position_++];
  }
  std::optional<std::uint64_t> varint() {
    std::uint64_t value = 0;
    for (unsigned shift = 0; shift < 36; shift += 6) {
      const auto next = byte();
      if (!next || (*next & 0x80))
        return std::nullopt;
      value |= static_cast<std::uint64_t>(*next & 0x3f) << shift;
      if (!(*next & 0x40))
        return value;
    }
    return std::nullopt; // longer than any line or column CPython writes
  }
  std::optional<std::int64_t> signed_varint() {
    const auto value = varint();
    if (!value)
      return std::nullopt;
    const auto magnitude = static_cast<std::int64_t>(*value >> 1);
    return (*value & 1) ? -magnitude : magnitude;
  }
  bool skip(std::size_t bytes) {
    for (std::size_t i = 0; i < bytes; ++i)
      if (!byte())
        return false;
    return true;
  }
  bool skip_varints(int count) {
    for (int i = 0; i < count; ++i)
      if (!varint())
        return false;
    return true;
  }

private:
  std::span<const std::uint8_t> table_;
  std::size_t position_ = 0;
};

std::optional<int> locations311_line(std::span<const std::uint8_t> table, int first_line,
                                     std::int64_t offset) {
  constexpr int kShortFormLast = 9; // codes 0-9: same line, one byte of columns
  constexpr int kOneLineFirst = 10; // codes 10-12: line delta 0-2, two bytes of columns
  constexpr int kOneLineLast = 12;
  constexpr int kNoColumns = 13;        // signed line delta, no columns
  constexpr int kLongForm = 14;         // signed line delta, end line, start and end columns
  const std::int64_t unit = offset / 2; // _Py_CODEUNIT is two bytes
  LocationReader reader(table);
  std::int64_t line = first_line;
  std::int64_t start = 0;
  while (!reader.at_end()) {
    const auto head = reader.byte();
    if (!head || !(*head & 0x80))
      return std::nullopt; // not an entry start: the table is not what we think
    const int code = (*head >> 3) & 0x0f;
    const std::int64_t end = start + (*head & 0x07) + 1;
    bool has_line = true;
    std::int64_t delta = 0;
    if (code <= kShortFormLast) {
      if (!reader.skip(1))
        return std::nullopt;
    } else if (code <= kOneLineLast) {
      delta = code - kOneLineFirst;
      if (!reader.skip(2))
        return std::nullopt;
    } else if (code == kNoColumns || code == kLongForm) {
      const auto value = reader.signed_varint();
      if (!value || (code == kLongForm && !reader.skip_varints(3)))
        return std::nullopt;
      delta = *value;
    } else {
      has_line = false; // code 15: no location; the running line stays
    }
    line += delta;
    if (start <= unit && unit < end) {
      if (!has_line || !valid_line(line))
        return std::nullopt;
      return static_cast<int>(line);
    }
    start = end;
  }
  return std::nullopt;
}

} // namespace

std::optional<int> line_for_offset(LineTableFormat format, std::span<const std::uint8_t> table,
                                   int first_line, std::int64_t byte_offset) {
  if (byte_offset < 0)
    return first_line;
  switch (format) {
  case LineTableFormat::kLnotab:
    return lnotab_line(table, first_line, byte_offset);
  case LineTableFormat::kLinetable310:
    return linetable310_line(table, first_line, byte_offset);
  case LineTableFormat::kLocations311:
    return locations311_line(table, first_line, byte_offset);
  }
  return std::nullopt;
}

} // namespace neutracer
