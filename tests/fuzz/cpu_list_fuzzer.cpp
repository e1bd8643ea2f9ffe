// SPDX-License-Identifier: Apache-2.0
// Fuzzes the sysfs CPU list parser ("0-3,8").
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "os/os_proc_parsers.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  const auto cpus = neutracer::parse_cpu_list(text);
  require(cpus.value.has_value() == cpus.error.empty(), "a value or an error, not both");
  if (!cpus)
    return 0;
  require(cpus->size() <= 65536, "at most 65536 CPUs");
  require(std::all_of(cpus->begin(), cpus->end(), [](std::uint32_t cpu) { return cpu < 65536; }),
          "every CPU number is below 65536");
  return 0;
}
