// SPDX-License-Identifier: Apache-2.0
// Fuzzes CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES handling over a process environment
// (/proc/<pid>/environ, which its owner writes), with and without the host's GPU list.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpus/visible_gpus.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  const std::string_view environ(reinterpret_cast<const char *>(data), size);
  static const std::vector<neutracer::HostGpu> host{
      {0, "GPU-8f2a0c11-1111-2222-3333-444455556666", "0000:18:00.0"},
      {1, "GPU-8f2b0c11-1111-2222-3333-444455556666", "0000:3b:00.0"},
      {2, "GPU-c0ffee00-1111-2222-3333-444455556666", "0000:86:00.0"},
      {3, "GPU-c0ffee01-1111-2222-3333-444455556666", "0000:af:00.0"}};

  const auto bounded = neutracer::visible_gpu_labels(environ, host);
  require(bounded.size() <= host.size(), "no more devices than the host has");
  require(std::set<std::string>(bounded.begin(), bounded.end()).size() == bounded.size(),
          "no GPU twice");
  for (const auto &label : bounded)
    require(std::any_of(host.begin(), host.end(),
                        [&](const auto &gpu) { return std::to_string(gpu.index) == label; }),
            "every label is a host GPU's index");

  const auto unbounded = neutracer::visible_gpu_labels(environ, {});
  require(std::set<std::string>(unbounded.begin(), unbounded.end()).size() == unbounded.size(),
          "no ordinal twice without a host list");
  for (const auto &label : unbounded)
    require(!label.empty() && std::all_of(label.begin(), label.end(),
                                          [](char c) { return c >= '0' && c <= '9'; }),
            "without a host list, labels are plain ordinals");

  const auto cuda = neutracer::environment_value(environ, "CUDA_VISIBLE_DEVICES");
  if (cuda.found)
    require(environ.find("CUDA_VISIBLE_DEVICES=" + cuda.value) != std::string_view::npos,
            "the value found is in the environment");
  return 0;
}
