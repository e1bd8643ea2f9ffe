// SPDX-License-Identifier: Apache-2.0
// Fuzzes the CPython line-table decoder. The tables come from another process's memory, so
// any bytes may arrive: no crash, no overflow (UBSan), no negative line, and the decoder's
// few promises hold whatever the table says.
//
// Input: byte 0 picks the format, bytes 1-4 the first line, bytes 5-12 the byte offset
// (little-endian), the rest is the table.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "pystacks/line_table.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size < 13)
    return 0;
  const auto format = static_cast<neutracer::LineTableFormat>(data[0] % 3);
  std::int32_t first_line;
  std::int64_t offset;
  std::memcpy(&first_line, data + 1, sizeof first_line);
  std::memcpy(&offset, data + 5, sizeof offset);
  const std::span<const std::uint8_t> table(data + 13, size - 13);

  const auto line = neutracer::line_for_offset(format, table, first_line, offset);
  if (offset < 0)
    require(line == first_line, "a frame that has not started is on its first line");
  else if (line)
    require(*line >= 0, "a line is never negative");
  // The same question twice gets the same answer: nothing is kept between calls.
  require(neutracer::line_for_offset(format, table, first_line, offset) == line,
          "decoding is deterministic");
  return 0;
}
