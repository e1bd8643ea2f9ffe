// SPDX-License-Identifier: Apache-2.0
#pragma once
// One change to a process's GPU memory, as the detectors see it. CudaState appends these
// while applying events; the daemon loop hands them to the detectors once per scan.
#include <cstdint>

namespace neutracer {

enum class MemoryChangeKind : std::uint8_t { allocation, free, failed_allocation };

struct MemoryChange {
  std::uint64_t time_ns = 0; // CLOCK_MONOTONIC at the call's return
  MemoryChangeKind kind = MemoryChangeKind::allocation;
  std::uint64_t address = 0;    // 0 for failed allocations
  std::uint64_t bytes = 0;      // allocated, freed or requested
  std::uint64_t used_after = 0; // GPU-resident bytes (device, managed, vmm) in use afterwards
  std::uint32_t error = 0;      // CUresult of a failed allocation
  // Allocations and failed ones: the id of the caller's stack in the kernel's stack map
  // (bpf/neutracer_abi.h); -1 (NT_NO_STACK) when none was taken.
  std::int32_t stack_id = -1;
  // Their Python stack's key in the kernel's python_stacks map; 0 when none was taken.
  std::uint64_t python_stack = 0;
};

// CUDA_ERROR_OUT_OF_MEMORY: the only failure that is an out-of-memory. Others (PyTorch probing
// cuMemCreate handle types gets CUDA_ERROR_NOT_PERMITTED, 800) are API errors, counted as such.
inline constexpr std::uint32_t kCudaErrorOutOfMemory = 2;

} // namespace neutracer
