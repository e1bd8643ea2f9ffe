// SPDX-License-Identifier: Apache-2.0
/*
 * demo-trainer: the program scripts/flame_screenshot.sh photographs. It drives the stand-in
 * CUDA driver (tests/standin/libcuda.so.1; no GPU needed) from a small call tree named like a
 * training loop, so the daemon's flame graph has several allocation sites, sampled launches
 * and waits to show. The script builds it with frame pointers, so the kernel's stack walk
 * reaches main.
 *
 * Usage: demo-trainer GO_FILE EXIT_FILE STEPS
 *   prints "ready <pid>", waits until GO_FILE exists, runs STEPS training steps, prints
 *   "done", waits until EXIT_FILE exists and exits 0 (leaving its memory allocated).
 *
 * What stays allocated (run with NEUTRACER_STANDIN_CAPACITY of at least 32 GiB):
 *   alloc_parameters        8 x 768 MiB, once
 *   alloc_gradients         8 x 768 MiB, at the first step
 *   init_optimizer_state   16 x 768 MiB, at the first step
 *   save_activations        96 MiB every step, never freed (the leak)
 * attention() also takes a 512 MiB workspace each step and frees it. Each step launches 42
 * kernels and waits 20 ms in cuStreamSynchronize.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "standin_cuda.h"

#define NOINLINE __attribute__((noinline, used))
// Inlined, so that the CUDA call's caller is the named function (the site's first frame).
#define INLINE static inline __attribute__((always_inline))
#define MiB (1024ull * 1024ull)

enum { kLayers = 8, kBlocks = 4 };

static CUmodule module;

static void check(CUresult rc, const char *call) {
  if (rc != CUDA_SUCCESS) {
    fprintf(stderr, "%s returned %d\n", call, (int)rc);
    exit(1);
  }
}

static CUfunction kernel(const char *name) {
  CUfunction function = NULL;
  check(cuModuleGetFunction(&function, module, name), "cuModuleGetFunction");
  return function;
}

INLINE void launch(CUfunction function, int count) {
  for (int i = 0; i < count; ++i)
    check(cuLaunchKernel(function, 64, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL), "cuLaunchKernel");
}

INLINE CUdeviceptr device_alloc(unsigned long long bytes) {
  CUdeviceptr block = 0;
  check(cuMemAlloc_v2(&block, (size_t)bytes), "cuMemAlloc_v2");
  return block;
}

NOINLINE void alloc_parameters(int layer) {
  (void)layer;
  device_alloc(768 * MiB);
}

NOINLINE void load_model(void) {
  for (int layer = 0; layer < kLayers; ++layer)
    alloc_parameters(layer);
}

NOINLINE void embed(void) { launch(kernel("embedding_lookup"), 1); }

NOINLINE void attention(int block) {
  (void)block;
  CUdeviceptr workspace = 0;
  check(cuMemAllocAsync(&workspace, 512 * MiB, NULL), "cuMemAllocAsync");
  launch(kernel("flash_attention_fwd"), 2);
  launch(kernel("rotary_embedding"), 1);
  check(cuMemFreeAsync(workspace, NULL), "cuMemFreeAsync");
}

NOINLINE void mlp(int block) {
  (void)block;
  launch(kernel("gemm_bf16"), 2);
}

NOINLINE void forward(void) {
  embed();
  for (int block = 0; block < kBlocks; ++block) {
    attention(block);
    mlp(block);
  }
}

NOINLINE void save_activations(void) { device_alloc(96 * MiB); }

NOINLINE void alloc_gradients(void) {
  for (int layer = 0; layer < kLayers; ++layer)
    device_alloc(768 * MiB);
}

NOINLINE void backward(int step) {
  if (step == 0)
    alloc_gradients();
  launch(kernel("gemm_bf16_backward"), 20);
}

NOINLINE void init_optimizer_state(void) {
  for (int layer = 0; layer < 2 * kLayers; ++layer)
    device_alloc(768 * MiB);
}

NOINLINE void optimizer_step(int step) {
  if (step == 0)
    init_optimizer_state();
  launch(kernel("adamw_update"), 1);
}

NOINLINE void synchronize(void) {
  neutracer_standin_set_sync_ms(20);
  check(cuStreamSynchronize(NULL), "cuStreamSynchronize");
}

NOINLINE void train_step(int step) {
  forward();
  save_activations();
  backward(step);
  optimizer_step(step);
  synchronize();
}

NOINLINE void train(int steps) {
  load_model();
  for (int step = 0; step < steps; ++step)
    train_step(step);
}

static void wait_for(const char *path) {
  const struct timespec tick = {0, 10 * 1000 * 1000};
  while (access(path, F_OK) != 0)
    nanosleep(&tick, NULL);
}

int main(int argc, char **argv) {
  if (argc != 4 || atoi(argv[3]) <= 0) {
    fprintf(stderr, "usage: %s GO_FILE EXIT_FILE STEPS\n", argv[0]);
    return 2;
  }
  check(cuInit(0), "cuInit");
  static const char image[] = "demo-trainer module";
  check(cuModuleLoadData(&module, image), "cuModuleLoadData");
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  wait_for(argv[1]);
  train(atoi(argv[3]));
  printf("done\n");
  fflush(stdout);
  wait_for(argv[2]);
  return 0;
}
