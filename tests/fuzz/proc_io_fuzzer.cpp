// SPDX-License-Identifier: Apache-2.0
// Fuzzes the /proc/<pid>/io parser.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "os/os_proc_parsers.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  const auto io = neutracer::parse_proc_io(text);
  require(io.value.has_value() == io.error.empty(), "a value or an error, not both");
  if (!io)
    require(io.error.starts_with("io: "), "errors name the file");
  else
    for (const char *key : {"rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes"})
      require(text.find(key) != std::string_view::npos, "a value needs every required key");
  return 0;
}
