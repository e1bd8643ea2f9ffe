// SPDX-License-Identifier: Apache-2.0
#include "pystacks/process_memory.h"

#include <sys/uio.h>

namespace neutracer {

bool LiveProcessMemory::read(std::uint64_t address, std::span<std::uint8_t> buffer) const {
  if (buffer.empty())
    return true;
  if (address == 0 || address + buffer.size() < address)
    return false;
  iovec local{buffer.data(), buffer.size()};
  iovec remote{reinterpret_cast<void *>(address), buffer.size()};
  const ssize_t copied = ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
  return copied == static_cast<ssize_t>(buffer.size());
}

} // namespace neutracer
