// SPDX-License-Identifier: Apache-2.0
// Fuzzes the user-space side of Python frames against hostile memory: the input is a process's
// memory (one region at kBase, _PyRuntime at its start) for the CPython version its first byte
// picks; the thread walk and the frame resolver must stay within their bounds and give each
// frame a line or "<unreadable>", never crash, loop or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "pystacks/python_frame_resolver.h"
#include "pystacks/python_thread_walker.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

namespace {

constexpr std::uint64_t kBase = 0x10000;

class ImageMemory final : public neutracer::ProcessMemory {
public:
  explicit ImageMemory(std::span<const std::uint8_t> image) : image_(image) {}
  bool read(std::uint64_t address, std::span<std::uint8_t> buffer) const override {
    if (buffer.empty())
      return true;
    if (address < kBase || address - kBase > image_.size() ||
        buffer.size() > image_.size() - (address - kBase))
      return false;
    std::memcpy(buffer.data(), image_.data() + (address - kBase), buffer.size());
    return true;
  }

private:
  std::span<const std::uint8_t> image_;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  if (size < 1)
    return 0;
  const neutracer::PythonVersion version{3, 9 + data[0] % 5};
  const ImageMemory memory({data + 1, size - 1});
  neutracer::PythonProcess process;
  process.id = {1, 1};
  process.version = version;
  process.runtime_address = kBase;
  process.offsets = *neutracer::builtin_offsets(version);

  constexpr std::size_t kThreads = 8, kFrames = 16;
  const auto threads = neutracer::walk_python_threads(memory, process, kThreads, kFrames);
  require(threads.threads.size() <= kThreads, "thread states are bounded");
  neutracer::PythonFrameResolver resolver({32, 64 * 1024});
  for (const auto &thread : threads.threads) {
    require(thread.frames.size() <= kFrames, "frames are bounded");
    for (const auto &frame : thread.frames) {
      const auto resolved = resolver.resolve(process, memory, frame);
      require(resolved.line >= 0, "a line is never negative");
      require(resolved.readable || resolved.file == "<unreadable>", "an unreadable frame says so");
      require(resolved.file.size() <= 4 * neutracer::kMaxPythonStringChars, "names are bounded");
    }
  }
  require(resolver.cached_codes() <= 32 && resolver.cached_bytes() <= 64 * 1024,
          "the code cache stays within its limits");
  return 0;
}
