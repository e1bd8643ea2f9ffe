// SPDX-License-Identifier: Apache-2.0
#pragma once
// Whether a PyTorch CUDA library (libc10_cuda.so) exposes the caching allocator's static
// tracepoints: `pytorch:malloc(ptr, device, size, stream)`, fired when a tensor's block has
// been handed out, and `pytorch:free(ptr)`, fired when it goes back to the pool. Stock wheels
// carry them (torch 2.11: one malloc site, two free sites, each behind a semaphore); a build
// without them is reported, never guessed at.
#include <cstddef>
#include <string>
#include <string_view>

#include "allocator/usdt_notes.h"

namespace neutracer {

inline constexpr std::string_view kTorchProvider = "pytorch";
inline constexpr std::string_view kTorchMallocProbe = "malloc";
inline constexpr std::string_view kTorchFreeProbe = "free";

struct TorchAllocatorProbes {
  bool usable = false;
  std::size_t malloc_sites = 0; // pytorch:malloc notes with 4 arguments
  std::size_t free_sites = 0;   // pytorch:free notes with 1 argument
  std::string reason;           // why not usable (empty when usable)
};

// Usable when at least one malloc site and one free site have the argument counts above.
TorchAllocatorProbes find_torch_allocator_probes(const UsdtNotes &notes);

// Whether a mapped file's path names PyTorch's CUDA allocator library (".../libc10_cuda.so").
bool is_torch_cuda_library(std::string_view path);

} // namespace neutracer
