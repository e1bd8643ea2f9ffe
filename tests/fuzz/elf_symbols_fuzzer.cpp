// SPDX-License-Identifier: Apache-2.0
// Fuzzes the ELF symbol reader. The daemon, as root, opens every libcuda file any user's
// process maps, so a crafted file must neither crash it nor yield an offset outside the file.
// find_symbol_offsets takes a path: each input is written to one memfd, read back by path.
// The same file is then read as stack symbolisation reads the files of traced processes:
// build id, offsets both ways, function table lookups.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/elf_file.h"
#include "common/elf_symbols.h"
#include "stacks/function_table.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

namespace {

void check_symbolisation(const std::string &path, std::size_t size) {
  std::string error;
  auto file = neutracer::ElfFile::open(path, error);
  if (!file)
    return;
  const auto id = file->build_id();
  require(id.size() % 2 == 0 && id.find_first_not_of("0123456789abcdef") == std::string::npos,
          "a build id is lowercase hex bytes");
  std::vector<std::uint64_t> offsets;
  file->for_each_function([&](const char *name, std::uint64_t address, std::uint64_t) {
    require(name != nullptr, "a function has a name");
    if (const auto offset = file->file_offset(address)) {
      require(*offset < size, "a symbol's offset lies inside the file");
      require(file->address_at(*offset).has_value(), "an offset found maps back to an address");
      if (offsets.size() < 64)
        offsets.push_back(*offset);
    }
  });
  const auto table = neutracer::FunctionTable::load(std::move(*file), 4096);
  if (!table)
    return;
  offsets.push_back(size); // past the end
  offsets.push_back(0);
  for (const auto offset : offsets)
    for (const std::uint64_t delta : {0ull, 1ull, 4095ull})
      if (const auto function = table->find(offset + delta))
        require(function->name != nullptr, "a function found has a name");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  static const int fd = ::memfd_create("elf_symbols_fuzzer", MFD_CLOEXEC);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  require(fd >= 0, "memfd_create works");
  require(::ftruncate(fd, 0) == 0, "ftruncate works");
  require(::pwrite(fd, data, size, 0) == static_cast<ssize_t>(size), "pwrite writes it all");

  // Two real driver symbols, a short one a mutation can reach, and a repeat.
  const std::vector<std::string> names{"cuLaunchKernel", "cuMemAlloc_v2", "f", "f"};
  const auto result = neutracer::find_symbol_offsets(path, names);
  check_symbolisation(path, size);
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
