// SPDX-License-Identifier: Apache-2.0
#include "nvml/nvml_process_layout.h"

#include <array>
#include <cstdint>
#include <cstring>

namespace neutracer {
namespace {

constexpr std::array<std::size_t, 3> kKnownStrides = {24, 32, 16}; // current layout first
constexpr std::size_t kPidOffset = 0;
constexpr std::size_t kUsedMemoryOffset = 8;
// Each layout ends in an 8-byte block the driver always writes (used memory; both instance
// ids; protected memory), so the written bytes end inside the last entry's final 8 bytes.
constexpr std::size_t kFinalBlockBytes = 8;
constexpr std::uint32_t kPidMax = 4194304; // PID_MAX_LIMIT on 64-bit Linux

template <typename T> T read_at(std::span<const std::byte> buffer, std::size_t offset) {
  T value{};
  std::memcpy(&value, buffer.data() + offset, sizeof value);
  return value;
}

} // namespace

std::optional<std::size_t> nvml_process_stride(std::span<const std::byte> buffer, unsigned count) {
  if (count == 0)
    return std::nullopt;
  std::size_t written_end = buffer.size();
  while (written_end > 0 && buffer[written_end - 1] == kNvmlUnwrittenByte)
    --written_end;
  for (const std::size_t stride : kKnownStrides) {
    const std::size_t end = static_cast<std::size_t>(count) * stride;
    if (end <= buffer.size() && written_end > end - kFinalBlockBytes && written_end <= end)
      return stride;
  }
  return std::nullopt;
}

std::optional<std::vector<NvmlProcessMemory>>
decode_nvml_processes(std::span<const std::byte> buffer, unsigned count) {
  if (count == 0)
    return std::vector<NvmlProcessMemory>{};
  const auto stride = nvml_process_stride(buffer, count);
  if (!stride)
    return std::nullopt;
  std::vector<NvmlProcessMemory> processes;
  for (unsigned i = 0; i < count; ++i) {
    const std::size_t entry = i * *stride;
    NvmlProcessMemory process;
    process.pid = read_at<std::uint32_t>(buffer, entry + kPidOffset);
    process.used_bytes = read_at<std::uint64_t>(buffer, entry + kUsedMemoryOffset);
    if (process.pid == 0 || process.pid > kPidMax)
      return std::nullopt;
    processes.push_back(process);
  }
  return processes;
}

} // namespace neutracer
