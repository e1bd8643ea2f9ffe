// SPDX-License-Identifier: Apache-2.0
#include "pystacks/python_objects.h"

#include <algorithm>
#include <cstring>

namespace neutracer {
namespace {

// PyASCIIObject.state bits, the same from 3.9 to 3.13: interned:2, kind:3, compact:1, ascii:1.
constexpr std::uint32_t kStateKindShift = 2;
constexpr std::uint32_t kStateKindMask = 0x7;
constexpr std::uint32_t kStateCompact = 0x20;
constexpr std::uint32_t kStateAscii = 0x40;

template <typename T> T value_in(const std::vector<std::uint8_t> &block, std::uint32_t offset) {
  T value;
  std::memcpy(&value, block.data() + offset, sizeof(T));
  return value;
}

bool type_matches(const ProcessMemory &memory, const PythonOffsets &offsets, std::uint64_t address,
                  std::uint64_t expected) {
  if (expected == 0)
    return true;
  const auto type = memory.read_value<std::uint64_t>(address + offsets.object_type);
  return type && *type == expected;
}

void append_utf8(std::string &out, std::uint32_t code_point) {
  if ((code_point >= 0xd800 && code_point <= 0xdfff) || code_point > 0x10ffff)
    code_point = 0xfffd;
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  }
}

} // namespace

std::optional<std::string> read_python_str(const ProcessMemory &memory,
                                           const PythonOffsets &offsets,
                                           const PythonTypeAddresses &types,
                                           std::uint64_t address) {
  if (address == 0 || !type_matches(memory, offsets, address, types.unicode))
    return std::nullopt;
  const auto length = memory.read_value<std::int64_t>(address + offsets.unicode_length);
  const auto state = memory.read_value<std::uint32_t>(address + offsets.unicode_state);
  if (!length || !state || *length < 0 || *length > kMaxPythonStringChars)
    return std::nullopt;
  if (!(*state & kStateCompact))
    return std::nullopt; // a legacy (non-compact) string: code objects never hold one
  const std::uint32_t kind = (*state >> kStateKindShift) & kStateKindMask;
  const bool ascii = *state & kStateAscii;
  if (kind != 1 && kind != 2 && kind != 4)
    return std::nullopt;
  if (ascii && kind != 1)
    return std::nullopt;
  const std::uint64_t data =
      address + (ascii ? offsets.unicode_ascii_size : offsets.unicode_compact_size);
  std::vector<std::uint8_t> units(static_cast<std::size_t>(*length) * kind);
  if (!units.empty() && !memory.read(data, units))
    return std::nullopt;
  std::string out;
  out.reserve(units.size());
  for (std::size_t i = 0; i < units.size(); i += kind) {
    std::uint32_t code_point = 0;
    if (kind == 1) {
      code_point = units[i];
    } else if (kind == 2) {
      std::uint16_t unit;
      std::memcpy(&unit, &units[i], sizeof unit);
      code_point = unit;
    } else {
      std::memcpy(&code_point, &units[i], sizeof code_point);
    }
    if (ascii && code_point >= 0x80)
      code_point = 0xfffd; // not what an ASCII string holds
    append_utf8(out, code_point);
  }
  return out;
}

std::optional<std::vector<std::uint8_t>>
read_python_bytes(const ProcessMemory &memory, const PythonOffsets &offsets,
                  const PythonTypeAddresses &types, std::uint64_t address, std::int64_t max_size) {
  if (address == 0 || !type_matches(memory, offsets, address, types.bytes))
    return std::nullopt;
  const auto size = memory.read_value<std::int64_t>(address + offsets.bytes_size);
  if (!size || *size < 0 || *size > max_size)
    return std::nullopt;
  std::vector<std::uint8_t> data(static_cast<std::size_t>(*size));
  if (!data.empty() && !memory.read(address + offsets.bytes_data, data))
    return std::nullopt;
  return data;
}

std::optional<PythonCodeHeader> read_python_code_header(const ProcessMemory &memory,
                                                        const PythonOffsets &offsets,
                                                        const PythonTypeAddresses &types,
                                                        std::uint64_t address) {
  if (address == 0)
    return std::nullopt;
  const std::uint32_t name_field =
      offsets.code_qualname != kNoField ? offsets.code_qualname : offsets.code_name;
  const std::uint32_t end =
      std::max({offsets.object_type + 8, offsets.code_filename + 8, name_field + 8,
                offsets.code_linetable + 8, offsets.code_firstlineno + 4});
  // One read for all fields: they sit within the object's first few hundred bytes.
  std::vector<std::uint8_t> block(end);
  if (!memory.read(address, block))
    return std::nullopt;
  PythonCodeHeader header;
  header.type = value_in<std::uint64_t>(block, offsets.object_type);
  header.filename = value_in<std::uint64_t>(block, offsets.code_filename);
  header.name = value_in<std::uint64_t>(block, name_field);
  header.line_table = value_in<std::uint64_t>(block, offsets.code_linetable);
  header.first_line = value_in<std::int32_t>(block, offsets.code_firstlineno);
  if (types.code != 0 && header.type != types.code)
    return std::nullopt;
  if (header.filename == 0 || header.name == 0 || header.line_table == 0 || header.first_line < 0)
    return std::nullopt;
  return header;
}

std::optional<PythonCode> read_python_code(const ProcessMemory &memory,
                                           const PythonOffsets &offsets,
                                           const PythonTypeAddresses &types,
                                           std::uint64_t address) {
  const auto header = read_python_code_header(memory, offsets, types, address);
  if (!header)
    return std::nullopt;
  auto filename = read_python_str(memory, offsets, types, header->filename);
  auto name = read_python_str(memory, offsets, types, header->name);
  auto line_table =
      read_python_bytes(memory, offsets, types, header->line_table, kMaxLineTableBytes);
  if (!filename || !name || !line_table)
    return std::nullopt;
  return PythonCode{*header, std::move(*filename), std::move(*name), std::move(*line_table)};
}

} // namespace neutracer
