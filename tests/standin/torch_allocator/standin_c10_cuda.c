// SPDX-License-Identifier: Apache-2.0
/*
 * Stand-in for PyTorch's libc10_cuda.so: declares the caching allocator's
 * static tracepoints as PyTorch does (provider "pytorch", each probe behind a
 * semaphore), so the allocator view can be tested without PyTorch or a GPU.
 */
#include "standin_c10_cuda.h"

#include <stdatomic.h>
#include <stdint.h>

/* With semaphores, each note records its semaphore's address; a tracer (libbpf
 * through the kernel's uprobe reference counter) raises it while attached. */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

unsigned short pytorch_malloc_semaphore __attribute__((unused)) __attribute__((section(".probes")));
unsigned short pytorch_free_semaphore __attribute__((unused)) __attribute__((section(".probes")));

/* As PyTorch's TORCH_SDT_IS_ENABLED: the probe's arguments are only computed
 * while someone listens. The volatile read keeps the check at the site. */
#define STANDIN_SDT_IS_ENABLED(name)                                                               \
  (__builtin_expect(*(volatile unsigned short *)&pytorch_##name##_semaphore != 0, 0))

/* Away from the stand-in CUDA driver's 0x7e0000000000 range. */
#define STANDIN_FIRST_ADDRESS 0x7d0000000000ull
#define STANDIN_BLOCK_ALIGN 512ull

static atomic_ullong next_address = STANDIN_FIRST_ADDRESS;

void *standin_torch_allocate(size_t bytes, int device, unsigned long long stream) {
  if (bytes == 0)
    return NULL;
  const unsigned long long rounded = (bytes + STANDIN_BLOCK_ALIGN - 1) & ~(STANDIN_BLOCK_ALIGN - 1);
  void *ptr = (void *)(uintptr_t)atomic_fetch_add(&next_address, rounded);
  /* PyTorch's types: c10::DeviceIndex is int8_t, c10::StreamId is int64_t. */
  if (STANDIN_SDT_IS_ENABLED(malloc))
    STAP_PROBE4(pytorch, malloc, ptr, (int8_t)device, bytes, (int64_t)stream);
  return ptr;
}

void standin_torch_free(void *ptr) {
  if (ptr == NULL)
    return;
  if (STANDIN_SDT_IS_ENABLED(free))
    STAP_PROBE1(pytorch, free, ptr);
}

unsigned standin_torch_malloc_semaphore(void) {
  return *(volatile unsigned short *)&pytorch_malloc_semaphore;
}

unsigned standin_torch_free_semaphore(void) {
  return *(volatile unsigned short *)&pytorch_free_semaphore;
}
