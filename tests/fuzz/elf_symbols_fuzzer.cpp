// Fuzzes the ELF symbol reader. The daemon, as root, opens every libcuda file any user's
// process maps, so a crafted file must neither crash it nor yield an offset outside the file.
// find_symbol_offsets takes a path: each input is written to one memfd, read back by path.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/elf_symbols.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  static const int fd = ::memfd_create("elf_symbols_fuzzer", MFD_CLOEXEC);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  require(fd >= 0, "memfd_create works");
  require(::ftruncate(fd, 0) == 0, "ftruncate works");
  require(::pwrite(fd, data, size, 0) == static_cast<ssize_t>(size), "pwrite writes it all");

  // Two real driver symbols, a short one a mutation can reach, and a repeat.
  const std::vector<std::string> names{"cuLaunchKernel", "cuMemAlloc_v2", "f", "f"};
  const auto result = neutracer::find_symbol_offsets(path, names);
  if (!result.error.empty()) {
    require(result.found.empty(), "an error finds nothing");
    return 0;
  }
  std::set<std::string> accounted;
  for (const auto &[name, offset] : result.found) {
    require(std::set<std::string>(names.begin(), names.end()).contains(name),
            "only names asked for are found");
    require(offset < size, "a found offset lies inside the file");
    accounted.insert(name);
  }
  for (const auto &name : result.missing) {
    require(!result.found.contains(name), "a name is found or missing, not both");
    accounted.insert(name);
  }
  require(accounted.size() == 3, "every name asked for is found or missing");
  return 0;
}
