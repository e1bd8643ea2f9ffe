// SPDX-License-Identifier: Apache-2.0
/*
 * neutracer-sites: drives the stand-in CUDA driver from functions with known names, for the
 * call-site tests. Built with frame pointers, so the kernel's stack walk names each caller:
 *
 *   leak:B:N      leak_here() allocates N blocks of B bytes and keeps them
 *   oom:B         oom_here() makes one cuMemAlloc_v2(B) that must fail with OUT_OF_MEMORY
 *   sync:MS       wait_here() makes one cuStreamSynchronize that waits MS ms
 *   launch:N      launch_here() makes N cuLaunchKernel of one kernel
 *   sleep:MS      sleeps MS ms (no CUDA call)
 *   ready         prints "ready <pid>"
 *   wait:PATH     polls every 10 ms until PATH exists (prints "waiting PATH" first)
 *
 * Every step but ready and wait prints "<step> ok" when done; a malformed step or an
 * unexpected CUresult prints to stderr and exits 2 or 1. The stack under each named function
 * is main -> run_step -> <name>.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "standin_cuda.h"

#define NOINLINE __attribute__((noinline, used))

static CUfunction kernel;

static void fail(const char *call, CUresult rc) {
  fprintf(stderr, "%s returned %d\n", call, (int)rc);
  exit(1);
}

NOINLINE void leak_here(unsigned long long bytes, unsigned long count) {
  for (unsigned long i = 0; i < count; ++i) {
    CUdeviceptr block = 0;
    const CUresult rc = cuMemAlloc_v2(&block, (size_t)bytes);
    if (rc != CUDA_SUCCESS)
      fail("cuMemAlloc_v2", rc);
  }
}

NOINLINE void oom_here(unsigned long long bytes) {
  CUdeviceptr block = 0;
  const CUresult rc = cuMemAlloc_v2(&block, (size_t)bytes);
  if (rc != CUDA_ERROR_OUT_OF_MEMORY)
    fail("cuMemAlloc_v2 (expected out of memory)", rc);
}

NOINLINE void wait_here(unsigned ms) {
  neutracer_standin_set_sync_ms(ms);
  const CUresult rc = cuStreamSynchronize(NULL);
  if (rc != CUDA_SUCCESS)
    fail("cuStreamSynchronize", rc);
}

NOINLINE void launch_here(unsigned long count) {
  for (unsigned long i = 0; i < count; ++i) {
    const CUresult rc = cuLaunchKernel(kernel, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL);
    if (rc != CUDA_SUCCESS)
      fail("cuLaunchKernel", rc);
  }
}

static void wait_for(const char *path) {
  printf("waiting %s\n", path);
  fflush(stdout);
  const struct timespec tick = {0, 10 * 1000 * 1000};
  while (access(path, F_OK) != 0)
    nanosleep(&tick, NULL);
}

static int number(const char *text, unsigned long long *out) {
  char *end = NULL;
  if (!*text)
    return 0;
  *out = strtoull(text, &end, 10);
  return *end == '\0' || *end == ':';
}

NOINLINE static void run_step(const char *step) {
  unsigned long long a = 0, b = 0;
  const char *colon = strchr(step, ':');
  const char *second = colon ? strchr(colon + 1, ':') : NULL;
  if (strcmp(step, "ready") == 0) {
    printf("ready %d\n", (int)getpid());
  } else if (strncmp(step, "wait:", 5) == 0) {
    wait_for(step + 5);
    return;
  } else if (strncmp(step, "leak:", 5) == 0 && second && number(step + 5, &a) &&
             number(second + 1, &b)) {
    leak_here(a, (unsigned long)b);
  } else if (strncmp(step, "oom:", 4) == 0 && number(step + 4, &a)) {
    oom_here(a);
  } else if (strncmp(step, "sync:", 5) == 0 && number(step + 5, &a)) {
    wait_here((unsigned)a);
  } else if (strncmp(step, "launch:", 7) == 0 && number(step + 7, &a)) {
    launch_here((unsigned long)a);
  } else if (strncmp(step, "sleep:", 6) == 0 && number(step + 6, &a)) {
    const struct timespec pause = {(time_t)(a / 1000), (long)(a % 1000) * 1000000L};
    nanosleep(&pause, NULL);
  } else {
    fprintf(stderr, "unknown or malformed step '%s'\n", step);
    exit(2);
  }
  if (strcmp(step, "ready") != 0)
    printf("%s ok\n", step);
  fflush(stdout);
}

int main(int argc, char **argv) {
  CUresult rc = cuInit(0);
  if (rc != CUDA_SUCCESS)
    fail("cuInit", rc);
  CUmodule module = NULL;
  static const char image[] = "neutracer-sites module";
  if ((rc = cuModuleLoadData(&module, image)) != CUDA_SUCCESS)
    fail("cuModuleLoadData", rc);
  if ((rc = cuModuleGetFunction(&kernel, module, "sites_kernel")) != CUDA_SUCCESS)
    fail("cuModuleGetFunction", rc);
  for (int i = 1; i < argc; ++i)
    run_step(argv[i]);
  return 0;
}
