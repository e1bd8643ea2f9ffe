// SPDX-License-Identifier: Apache-2.0
#pragma once
// Process memory for tests: regions written at chosen addresses; a read succeeds only when it
// lies inside one region, as process_vm_readv fails on unmapped pages.
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include "pystacks/process_memory.h"

namespace neutracer::test {

class FakeProcessMemory final : public ProcessMemory {
public:
  bool read(std::uint64_t address, std::span<std::uint8_t> buffer) const override {
    ++reads_;
    if (buffer.empty())
      return true;
    auto region = regions_.upper_bound(address);
    if (region == regions_.begin())
      return false;
    --region;
    const std::uint64_t into = address - region->first;
    if (into > region->second.size() || buffer.size() > region->second.size() - into)
      return false;
    std::memcpy(buffer.data(), region->second.data() + into, buffer.size());
    return true;
  }

  // A zero-filled region of `size` bytes at `address` (replacing any region there).
  void map(std::uint64_t address, std::size_t size) { regions_[address].assign(size, 0); }
  void unmap(std::uint64_t address) { regions_.erase(address); }

  // Writes into the region holding `address` (which must be mapped).
  void write(std::uint64_t address, std::span<const std::uint8_t> bytes) {
    auto region = --regions_.upper_bound(address);
    std::memcpy(region->second.data() + (address - region->first), bytes.data(), bytes.size());
  }
  template <typename T> void put(std::uint64_t address, T value) {
    std::uint8_t bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    write(address, bytes);
  }

  std::size_t reads() const { return reads_; }

private:
  std::map<std::uint64_t, std::vector<std::uint8_t>> regions_;
  mutable std::size_t reads_ = 0;
};

} // namespace neutracer::test
