// SPDX-License-Identifier: Apache-2.0
// launch_loop: the time per launch of an empty kernel from a small CUDA C++ program (static
// cudart), served over stdin/stdout like noop_loop.c, so that the same process can be timed
// with no tool, with a bare uprobe on cuLaunchKernel and under neutracerd.
//
//   nvcc -O2 -cudart static -arch=native -o launch_loop launch_loop.cu
//   launch_loop [LIBNTNOOP]
//                   creates the context, launches the kernel 20000 times (warm-up), prints
//                   "READY <pid>", then serves:
//     launch N      N launches <<<1,1>>> and one cudaDeviceSynchronize
//                   -> "RESULT launch empty N SECONDS"
//     launchx FUNC N  the same, each launch preceded by FUNC(NULL) from LIBNTNOOP (probed or
//                   not: the cost of a trap next to the launch path in a small process)
//                   -> "RESULT launchx FUNC N SECONDS"
//     quit
#include <cuda_runtime.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <unistd.h>

extern "C" __global__ void nt_diag_empty() {}

static double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static bool ok(cudaError_t e, const char *what) {
  if (e == cudaSuccess)
    return true;
  printf("ERROR %s: %s\n", what, cudaGetErrorString(e));
  fflush(stdout);
  return false;
}

int main(int argc, char **argv) {
  void *noop = argc > 1 ? dlopen(argv[1], RTLD_NOW) : nullptr;
  if (!ok(cudaSetDevice(0), "cudaSetDevice") || !ok(cudaDeviceSynchronize(), "context"))
    return 2;
  for (int i = 0; i < 20000; ++i)
    nt_diag_empty<<<1, 1>>>();
  if (!ok(cudaDeviceSynchronize(), "warm-up"))
    return 2;
  printf("READY %d\n", (int)getpid());
  fflush(stdout);

  char line[256];
  while (fgets(line, sizeof(line), stdin)) {
    long n = 0;
    char func[128];
    if (!strncmp(line, "quit", 4))
      break;
    if (noop && sscanf(line, "launchx %127s %ld", func, &n) == 2) {
      void (*volatile fn)(void *) = (void (*)(void *))dlsym(noop, func);
      if (!fn) {
        printf("ERROR no symbol %s\n", func);
        fflush(stdout);
        continue;
      }
      cudaDeviceSynchronize();
      const double t0 = now_s();
      for (long i = 0; i < n; ++i) {
        fn(nullptr);
        nt_diag_empty<<<1, 1>>>();
      }
      const bool good = ok(cudaDeviceSynchronize(), "launchx loop");
      const double t = now_s() - t0;
      if (good)
        printf("RESULT launchx %s %ld %.9f\n", func, n, t);
      fflush(stdout);
      continue;
    }
    if (sscanf(line, "launch %ld", &n) != 1) {
      printf("ERROR bad command: %s", line);
      fflush(stdout);
      continue;
    }
    cudaDeviceSynchronize();
    const double t0 = now_s();
    for (long i = 0; i < n; ++i)
      nt_diag_empty<<<1, 1>>>();
    const bool good = ok(cudaDeviceSynchronize(), "launch loop");
    const double t = now_s() - t0;
    if (good)
      printf("RESULT launch empty %ld %.9f\n", n, t);
    fflush(stdout);
  }
  return 0;
}
