// SPDX-License-Identifier: Apache-2.0
// Fuzzes the /proc/<pid>/status parser (free-text lines such as Name: come from the process).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "os/os_proc_parsers.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  const auto status = neutracer::parse_proc_status(text);
  require(status.value.has_value() == status.error.empty(), "a value or an error, not both");
  if (!status)
    require(status.error.starts_with("status: "), "errors name the file");
  else
    require(text.find("Threads") != std::string_view::npos, "a value needs a Threads line");
  return 0;
}
