// SPDX-License-Identifier: Apache-2.0
// Fuzzes the container name extraction from Docker's config.v2.json. dockerd writes the file,
// but much of it is chosen by whoever starts the container (environment, labels, command).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "containers/docker_names.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  constexpr std::string_view kId =
      "3f4e9c1d2b7a8e6f5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e";
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  const auto result = neutracer::parse_docker_config_name(text, kId);
  require(result.name.empty() != result.error.empty(), "a name or an error, never both");
  require(result.name.size() <= 255, "a name has at most 255 characters");
  for (const char c : result.name)
    require((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '.' || c == '-',
            "a name has Docker's characters only");
  require(result.name.empty() || result.name.front() != '-', "a name starts alphanumeric");
  return 0;
}
