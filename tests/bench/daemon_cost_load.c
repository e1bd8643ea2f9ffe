// SPDX-License-Identifier: Apache-2.0
/*
 * Load generator for tests/bench/daemon_cost.sh: calls the stand-in libcuda.so.1 at a paced
 * rate, in phases the script starts by creating files in CTL_DIR.
 *
 *   daemon_cost_load CTL_DIR KERNELS LAUNCHES_PER_S ALLOCS_PER_S SECONDS ALLOC_BYTES
 *
 *   cuInit, print "ready PID"
 *   wait for CTL_DIR/launch; load a module, get KERNELS functions (bench_k00, bench_k01, ...),
 *     launch them round-robin at LAUNCHES_PER_S for SECONDS; print
 *     "launched PID COUNT ELAPSED_S"
 *   wait for CTL_DIR/alloc; cuMemAlloc_v2(ALLOC_BYTES) + cuMemFree_v2 pairs at ALLOCS_PER_S
 *     for SECONDS; print "allocated PID ALLOCS FREES ELAPSED_S"
 *   wait for CTL_DIR/stop; exit 0.
 * A rate of 0 skips that phase's calls (it still prints its line). Pacing: every 10 ms the
 * program makes the calls that bring its count to rate × elapsed time, then sleeps until the
 * next tick (absolute deadlines, so the rate does not drift). Any unexpected CUresult exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "standin_cuda.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void wait_for(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  while (access(path, F_OK) != 0) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

static void check(CUresult rc, const char *what) {
  if (rc != CUDA_SUCCESS) {
    fprintf(stderr, "%s returned %d\n", what, (int)rc);
    exit(1);
  }
}

typedef void (*call_fn)(void *ctx, unsigned long long index);

/* Calls fn rate times a second for seconds; returns the number of calls, sets *elapsed. */
static unsigned long long paced(double rate, double seconds, call_fn fn, void *ctx,
                                double *elapsed) {
  unsigned long long done = 0;
  const double start = now_s();
  struct timespec tick;
  clock_gettime(CLOCK_MONOTONIC, &tick);
  for (;;) {
    double t = now_s() - start;
    if (t >= seconds)
      break;
    unsigned long long target = (unsigned long long)(rate * t);
    while (done < target)
      fn(ctx, done++);
    tick.tv_nsec += 10 * 1000 * 1000;
    if (tick.tv_nsec >= 1000000000L) {
      tick.tv_nsec -= 1000000000L;
      tick.tv_sec++;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &tick, NULL) == EINTR) {
    }
  }
  *elapsed = now_s() - start;
  return done;
}

struct launch_ctx {
  CUfunction *functions;
  unsigned kernels;
};

static void launch_one(void *p, unsigned long long i) {
  struct launch_ctx *ctx = p;
  check(cuLaunchKernel(ctx->functions[i % ctx->kernels], 1, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL),
        "cuLaunchKernel");
}

static void alloc_free_one(void *p, unsigned long long i) {
  (void)i;
  CUdeviceptr ptr = 0;
  check(cuMemAlloc_v2(&ptr, *(size_t *)p), "cuMemAlloc_v2");
  check(cuMemFree_v2(ptr), "cuMemFree_v2");
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr,
            "usage: %s CTL_DIR KERNELS LAUNCHES_PER_S ALLOCS_PER_S SECONDS ALLOC_BYTES\n",
            argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  unsigned kernels = (unsigned)strtoul(argv[2], NULL, 10);
  double launch_rate = strtod(argv[3], NULL);
  double alloc_rate = strtod(argv[4], NULL);
  double seconds = strtod(argv[5], NULL);
  size_t alloc_bytes = (size_t)strtoull(argv[6], NULL, 10);
  if (kernels == 0 || seconds <= 0 || alloc_bytes == 0) {
    fprintf(stderr, "KERNELS, SECONDS and ALLOC_BYTES must be positive\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  check(cuInit(0), "cuInit");
  printf("ready %d\n", (int)getpid());

  wait_for(dir, "launch");
  unsigned long long launched = 0;
  double elapsed = 0;
  if (launch_rate > 0) {
    CUmodule module;
    static const char image[] = "daemon_cost module";
    check(cuModuleLoadData(&module, image), "cuModuleLoadData");
    struct launch_ctx ctx = {calloc(kernels, sizeof(CUfunction)), kernels};
    for (unsigned k = 0; k < kernels; k++) {
      char name[32];
      snprintf(name, sizeof name, "bench_k%02u", k);
      check(cuModuleGetFunction(&ctx.functions[k], module, name), "cuModuleGetFunction");
    }
    launched = paced(launch_rate, seconds, launch_one, &ctx, &elapsed);
  }
  printf("launched %d %llu %.3f\n", (int)getpid(), launched, elapsed);

  wait_for(dir, "alloc");
  unsigned long long pairs = 0;
  elapsed = 0;
  if (alloc_rate > 0)
    pairs = paced(alloc_rate, seconds, alloc_free_one, &alloc_bytes, &elapsed);
  printf("allocated %d %llu %llu %.3f\n", (int)getpid(), pairs, pairs, elapsed);

  wait_for(dir, "stop");
  return 0;
}
