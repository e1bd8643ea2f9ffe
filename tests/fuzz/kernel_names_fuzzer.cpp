// SPDX-License-Identifier: Apache-2.0
// Fuzzes kernel name demangling and shortening. Names are whatever a traced process passes to
// cuModuleGetFunction / cuLibraryGetKernel, up to NT_NAME_MAX bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cuda/kernel_names.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view name(reinterpret_cast<const char *>(data), size);
  const auto demangled = neutracer::demangle(name);
  const auto label = neutracer::short_kernel_name(name);
  require(!demangled.empty() || name.empty(), "demangling never loses a name");
  require(label.size() <= demangled.size() && (!label.empty() || name.empty()),
          "a non-empty label, no longer than the demangled name");
  return 0;
}
