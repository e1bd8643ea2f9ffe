// SPDX-License-Identifier: Apache-2.0
// Raw CUDA programs for tests/bench/gpu/run.py, compiled at run time with
//   nvcc -O2 -cudart static -arch=native -o nt_cuda_bench cuda_bench.cu
//
//   nt_cuda_bench launch N WARMUP SYNC_DIR [TIMEOUT_S]
//       Creates the context, prints `READY <pid>`, waits for SYNC_DIR/go, launches the empty
//       kernel WARMUP times (synchronised), then N times followed by one cudaDeviceSynchronize,
//       prints `RESULT {json}` (ns per launch over the N timed launches), waits for
//       SYNC_DIR/release and exits.
//   nt_cuda_bench chunked SECONDS CHUNK WARMUP SYNC_DIR [TIMEOUT_S]
//       (paired.py) Creates the context, prints `READY <pid>`, waits for SYNC_DIR/go, launches
//       the empty kernel WARMUP times (synchronised), then for SECONDS launches it in chunks of
//       CHUNK launches, each ended by a cudaDeviceSynchronize and timestamped with
//       CLOCK_MONOTONIC; prints `RESULT {json}` with "chunk_start", "chunk_ends" (seconds),
//       "chunk_steps" (= CHUNK; one step is one launch) and ns per launch over all chunks, waits
//       for SYNC_DIR/release and exits.
//   nt_cuda_bench leak COUNT BYTES SYNC_DIR|- exit|reset [TIMEOUT_S]
//       Creates the context, (with a SYNC_DIR: READY / go), cudaMalloc COUNT x BYTES and frees
//       none, prints `RESULT {json}`, (with a SYNC_DIR: waits for release), then exits;
//       `reset` calls cudaDeviceReset() first (destroys the context: compute-sanitizer's leak
//       check reports at context destruction), `exit` just returns from main.
// Every CUDA error is fatal (exit status 2); waits time out with exit status 3.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <time.h>
#include <unistd.h>
#include <vector>

#define CHECK(x)                                                                                 \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "nt_cuda_bench: %s failed at line %d: %s\n", #x, __LINE__,                 \
              cudaGetErrorString(e_));                                                           \
      exit(2);                                                                                   \
    }                                                                                            \
  } while (0)

extern "C" __global__ void nt_bench_empty() {}

static double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void wait_file(const std::string &path, double timeout) {
  const double start = now_s();
  while (access(path.c_str(), F_OK) != 0) {
    if (now_s() - start > timeout) {
      fprintf(stderr, "nt_cuda_bench: timed out after %.0f s waiting for %s\n", timeout,
              path.c_str());
      exit(3);
    }
    usleep(5000);
  }
}

static void create_context() {
  int devices = 0;
  CHECK(cudaGetDeviceCount(&devices)); // loads libcuda, cuInit
  if (devices < 1) {
    fprintf(stderr, "nt_cuda_bench: no CUDA device\n");
    exit(2);
  }
  CHECK(cudaSetDevice(0));
  CHECK(cudaDeviceSynchronize()); // primary context, no allocation, no launch
}

static void ready(const std::string &sync_dir, double timeout) {
  printf("READY %d\n", (int)getpid());
  fflush(stdout);
  wait_file(sync_dir + "/go", timeout);
}

static int run_launch(long n, long warmup, const std::string &sync_dir, double timeout) {
  const double t_start = now_s();
  create_context();
  const double t_context = now_s() - t_start;
  ready(sync_dir, timeout);

  const double t_w0 = now_s();
  for (long i = 0; i < warmup; ++i)
    nt_bench_empty<<<1, 1>>>();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  const double t_w1 = now_s();

  const double t0 = now_s();
  for (long i = 0; i < n; ++i)
    nt_bench_empty<<<1, 1>>>();
  CHECK(cudaDeviceSynchronize());
  const double t1 = now_s();
  CHECK(cudaGetLastError());

  const double seconds = t1 - t0;
  printf("RESULT {\"workload\": \"raw\", \"pid\": %d, \"launches\": %ld, \"warmup\": %ld, "
         "\"total_launches\": %ld, \"seconds\": %.9f, \"warmup_seconds\": %.6f, "
         "\"context_seconds\": %.6f, \"value\": %.3f, \"unit\": \"ns/launch\"}\n",
         (int)getpid(), n, warmup, n + warmup, seconds, t_w1 - t_w0, t_context,
         n > 0 ? seconds * 1e9 / (double)n : 0.0);
  fflush(stdout);
  wait_file(sync_dir + "/release", timeout);
  return 0;
}

static int run_chunked(double seconds, long chunk, long warmup, const std::string &sync_dir,
                       double timeout) {
  if (chunk < 1 || seconds <= 0) {
    fprintf(stderr, "nt_cuda_bench: chunked needs SECONDS > 0 and CHUNK >= 1\n");
    return 1;
  }
  const double t_start = now_s();
  create_context();
  const double t_context = now_s() - t_start;
  ready(sync_dir, timeout);

  const double t_w0 = now_s();
  for (long i = 0; i < warmup; ++i)
    nt_bench_empty<<<1, 1>>>();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  const double t_w1 = now_s();

  std::vector<double> ends;
  ends.reserve(1 << 16);
  const double start = now_s();
  const double deadline = start + seconds;
  do {
    for (long i = 0; i < chunk; ++i)
      nt_bench_empty<<<1, 1>>>();
    CHECK(cudaDeviceSynchronize());
    ends.push_back(now_s());
  } while (ends.back() < deadline);
  CHECK(cudaGetLastError());

  const long launches = chunk * (long)ends.size();
  const double elapsed = ends.back() - start;
  std::string list;
  list.reserve(ends.size() * 20);
  char number[40];
  for (size_t i = 0; i < ends.size(); ++i) {
    snprintf(number, sizeof(number), i ? ", %.9f" : "%.9f", ends[i]);
    list += number;
  }
  printf("RESULT {\"workload\": \"raw\", \"pid\": %d, \"launches\": %ld, \"iterations\": %ld, "
         "\"warmup\": %ld, \"total_launches\": %ld, \"seconds\": %.9f, "
         "\"warmup_seconds\": %.6f, \"context_seconds\": %.6f, \"value\": %.3f, "
         "\"unit\": \"ns/launch\", \"chunk_steps\": %ld, \"chunk_start\": %.9f, "
         "\"chunk_ends\": [%s]}\n",
         (int)getpid(), launches, launches, warmup, launches + warmup, elapsed, t_w1 - t_w0,
         t_context, elapsed * 1e9 / (double)launches, chunk, start, list.c_str());
  fflush(stdout);
  wait_file(sync_dir + "/release", timeout);
  return 0;
}

static int run_leak(long count, long bytes, const std::string &sync_dir, bool reset,
                    double timeout) {
  const bool sync = sync_dir != "-";
  const double t_start = now_s();
  create_context();
  const double t_context = now_s() - t_start;
  if (sync)
    ready(sync_dir, timeout);
  std::vector<void *> kept((size_t)count, nullptr);
  const double t0 = now_s();
  for (long i = 0; i < count; ++i)
    CHECK(cudaMalloc(&kept[(size_t)i], (size_t)bytes));
  CHECK(cudaDeviceSynchronize());
  const double t1 = now_s();
  printf("RESULT {\"workload\": \"leak\", \"pid\": %d, \"allocations\": %ld, \"bytes_each\": %ld, "
         "\"bytes_total\": %ld, \"alloc_seconds\": %.6f, \"context_seconds\": %.6f, "
         "\"reset\": %s}\n",
         (int)getpid(), count, bytes, count * bytes, t1 - t0, t_context, reset ? "true" : "false");
  fflush(stdout);
  if (sync)
    wait_file(sync_dir + "/release", timeout);
  if (reset)
    CHECK(cudaDeviceReset()); // destroys the context; still no cudaFree
  return 0;                   // `kept` is never freed
}

int main(int argc, char **argv) {
  if (argc >= 5 && strcmp(argv[1], "launch") == 0) {
    const double timeout = argc > 5 ? atof(argv[5]) : 300.0;
    return run_launch(atol(argv[2]), atol(argv[3]), argv[4], timeout);
  }
  if (argc >= 6 && strcmp(argv[1], "chunked") == 0) {
    const double timeout = argc > 6 ? atof(argv[6]) : 300.0;
    return run_chunked(atof(argv[2]), atol(argv[3]), atol(argv[4]), argv[5], timeout);
  }
  if (argc >= 6 && strcmp(argv[1], "leak") == 0) {
    const double timeout = argc > 6 ? atof(argv[6]) : 300.0;
    return run_leak(atol(argv[2]), atol(argv[3]), argv[4], strcmp(argv[5], "reset") == 0,
                    timeout);
  }
  fprintf(stderr,
          "usage: %s launch N WARMUP SYNC_DIR [TIMEOUT_S]\n"
          "       %s chunked SECONDS CHUNK WARMUP SYNC_DIR [TIMEOUT_S]\n"
          "       %s leak COUNT BYTES SYNC_DIR|- exit|reset [TIMEOUT_S]\n",
          argv[0], argv[0], argv[0]);
  return 1;
}
