// SPDX-License-Identifier: Apache-2.0
// Fuzzes /proc/<pid>/maps parsing line by line, as discovery reads it. Any process can shape
// its maps (file names, mappings), so no line may crash the daemon.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/proc_parsers.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char *>(data), size);
  while (!rest.empty()) {
    const auto end = rest.find('\n');
    const auto line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    const auto entry = neutracer::parse_maps_line(line);
    if (!entry)
      continue;
    require(entry->inode != 0, "anonymous mappings (inode 0) are not entries");
    // A deleted file's own name may end in " (deleted)" too: only the kernel's marker goes.
    auto text = line;
    while (text.ends_with('\r'))
      text.remove_suffix(1);
    require(text.ends_with(entry->path + (entry->deleted ? " (deleted)" : "")),
            "the path ends the line, less one deleted marker");
    if (neutracer::is_cuda_driver_library(entry->path))
      require(entry->path.find("libcuda.so") != std::string::npos,
              "a driver library path names libcuda.so");
  }
  return 0;
}
