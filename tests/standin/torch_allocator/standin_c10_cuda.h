// SPDX-License-Identifier: Apache-2.0
/*
 * The stand-in libc10_cuda.so (tests/standin/torch_allocator): what it exports.
 * Not PyTorch's API: two C functions whose only job is to fire the caching
 * allocator's static tracepoints, pytorch:malloc and pytorch:free.
 */
#ifndef NEUTRACER_STANDIN_C10_CUDA_H
#define NEUTRACER_STANDIN_C10_CUDA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A fake device address for a block of `bytes` (NULL when bytes is 0): unique,
 * 512-byte aligned, never dereferenced. Fires pytorch:malloc(ptr, device as a
 * signed 8-bit value, bytes, stream as a signed 64-bit id) when traced. */
void *standin_torch_allocate(size_t bytes, int device, unsigned long long stream);

/* Fires pytorch:free(ptr) when traced; NULL is ignored. */
void standin_torch_free(void *ptr);

/* The semaphores' current values: non-zero while a tracer is attached. */
unsigned standin_torch_malloc_semaphore(void);
unsigned standin_torch_free_semaphore(void);

#ifdef __cplusplus
}
#endif

#endif
