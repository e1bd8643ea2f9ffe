// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reads the entries nvmlDeviceGetComputeRunningProcesses wrote without trusting one struct
// layout. Drivers have written 16-byte (v1), 24-byte (v2, current) and, on R535, 32-byte
// entries through the same _v3 symbol. Every layout starts with the pid (4 bytes) and the used
// memory (8 bytes at offset 8); only the stride differs. The caller fills the buffer with
// kNvmlUnwrittenByte and sizes it for the widest layout, so the driver cannot overrun it and
// the end of what it wrote tells the stride. Pure.
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "nvml/nvml_api.h"

namespace neutracer {

// No field of a real entry ends in this byte pattern: pids are below 2^22, instance ids are
// small or 0xFFFFFFFF, byte counts are far below 0xA5A5... .
inline constexpr std::byte kNvmlUnwrittenByte{0xA5};
inline constexpr std::size_t kNvmlWidestProcessEntry = 32;

// Bytes to hand the driver for `capacity` entries of any layout.
inline std::size_t nvml_process_buffer_bytes(unsigned capacity) {
  return static_cast<std::size_t>(capacity) * kNvmlWidestProcessEntry;
}

// The stride (16, 24 or 32) whose `count` entries end where the written bytes end, or nullopt.
std::optional<std::size_t> nvml_process_stride(std::span<const std::byte> buffer, unsigned count);

// The `count` entries the driver wrote, or nullopt when no known layout fits or a pid is not a
// possible Linux pid (a layout mistake must lose the values, not invent processes).
std::optional<std::vector<NvmlProcessMemory>>
decode_nvml_processes(std::span<const std::byte> buffer, unsigned count);

} // namespace neutracer
