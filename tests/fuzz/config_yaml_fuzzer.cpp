// SPDX-License-Identifier: Apache-2.0
// Fuzzes the YAML config parser: any text must give a config or an error, never a crash, and a
// config it accepts must pass validation (every key is range-checked as it is read).
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  const auto result = neutracer::parse_config_yaml(text, "fuzz.yaml");
  require(result.config.has_value() != result.error.has_value(),
          "exactly one of config and error is set");
  if (result.error)
    require(result.error->what.starts_with("fuzz.yaml"), "errors name the file");
  if (result.config)
    require(!neutracer::validate_config(*result.config), "a parsed config validates");

  // The same text as a duration: whatever parses must print back to the same value.
  if (const auto duration = neutracer::parse_duration(text))
    require(neutracer::parse_duration(neutracer::format_duration(*duration)) == duration,
            "format_duration round-trips through parse_duration");
  return 0;
}
