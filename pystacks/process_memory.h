// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reads another process's memory. The frame reader sees only this interface, so tests give it
// fake memory (tests/unit/fake_process_memory.h) and the daemon a live process.
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <type_traits>

namespace neutracer {

class ProcessMemory {
public:
  virtual ~ProcessMemory() = default;

  // Copies buffer.size() bytes from `address`; false unless every byte could be read.
  virtual bool read(std::uint64_t address, std::span<std::uint8_t> buffer) const = 0;

  template <typename T> std::optional<T> read_value(std::uint64_t address) const {
    static_assert(std::is_trivially_copyable_v<T>);
    std::uint8_t bytes[sizeof(T)];
    if (!read(address, bytes))
      return std::nullopt;
    T value;
    std::memcpy(&value, bytes, sizeof(T));
    return value;
  }
};

// A live process's memory through process_vm_readv (needs ptrace access to it: root, or
// CAP_SYS_PTRACE). Never blocks on the target; an unmapped address fails the read.
class LiveProcessMemory final : public ProcessMemory {
public:
  explicit LiveProcessMemory(int pid) : pid_(pid) {}
  bool read(std::uint64_t address, std::span<std::uint8_t> buffer) const override;

private:
  int pid_;
};

} // namespace neutracer
