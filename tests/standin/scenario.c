// SPDX-License-Identifier: Apache-2.0
/*
 * neutracer-scenario: drives the stand-in CUDA driver (libcuda.so.1 in the
 * same directory) through a scripted sequence of steps with known call counts.
 *
 * Usage: neutracer-scenario STEP...
 *
 * All steps are parsed before any runs; an unknown step or a malformed number
 * prints a message on stderr and exits 2 without making any CUDA call.
 * cuInit(0) is called once at start-up, after parsing.
 * Each step prints exactly one line on stdout (flushed):
 *   "<step as given> ok[ key=value...]", except `ready` ("ready <pid>") and
 *   `wait:PATH` ("waiting PATH", printed before polling starts).
 * An unexpected CUresult prints to stderr and exits 1.  Exit 0 at the end;
 * allocations still live at exit are NOT freed (use free_all).
 *
 * Launch parameters: grid (1,1,1), block (128,1,1), sharedMem 0, stream NULL,
 * kernelParams NULL, extra NULL.  Async calls use stream NULL.
 * The module (cuModuleLoadData) and the library (cuLibraryLoadData) are each
 * loaded once, lazily, by the first step that needs them.
 *
 * Exact CUDA calls per step (N = COUNT; "+ load" = cuModuleLoadData or
 * cuLibraryLoadData once per process, on the first step that needs it):
 *
 *   step                          calls
 *   ----------------------------  ---------------------------------------------
 *   launch:NAME:N                 [+ cuModuleLoadData] 1 cuModuleGetFunction,
 *                                 N cuLaunchKernel
 *   launch_ptsz:NAME:N            [+ cuModuleLoadData] 1 cuModuleGetFunction,
 *                                 N cuLaunchKernel_ptsz
 *   launchex:NAME:N               [+ cuLibraryLoadData] 1 cuLibraryGetKernel,
 *                                 1 cuKernelGetFunction, N cuLaunchKernelEx
 *   launchex_ptsz:NAME:N          same, N cuLaunchKernelEx_ptsz
 *   launch_kernel_handle:NAME:N   [+ cuLibraryLoadData] 1 cuLibraryGetKernel,
 *                                 N cuLaunchKernel (f = the CUkernel value)
 *   coop:NAME:N                   [+ cuModuleLoadData] 1 cuModuleGetFunction,
 *                                 N cuLaunchCooperativeKernel
 *   coop_ptsz:NAME:N              same, N cuLaunchCooperativeKernel_ptsz
 *   names:N:LEN                   [+ cuModuleLoadData] N distinct names of LEN
 *                                 bytes ("k0000000_nnn..."), each 1
 *                                 cuModuleGetFunction + 1 cuLaunchKernel (a
 *                                 Triton / torch.compile style name flood)
 *   relaunch:N                    N cuLaunchKernel of the function the last
 *                                 module lookup returned, with no new lookup
 *                                 (a program that cached its handle)
 *   graph:N / graph_ptsz:N        N cuGraphLaunch / cuGraphLaunch_ptsz
 *   alloc:B:N                     N cuMemAlloc_v2(B)                 (kept live)
 *   alloc_async:B:N               N cuMemAllocAsync(B)               (kept live)
 *   alloc_pool:B:N                N cuMemAllocFromPoolAsync(B)       (kept live)
 *   alloc_managed:B:N             N cuMemAllocManaged(B, GLOBAL)     (kept live)
 *   alloc_pitch:W:H:N             N cuMemAllocPitch_v2(W, H, 4)      (kept live;
 *                                 size = roundup(W,512)*H)
 *   host_alloc:B:N                N cuMemHostAlloc(B, 0)             (kept live)
 *   alloc_host:B:N                N cuMemAllocHost_v2(B)             (kept live)
 *   vmm_create:B:N                N cuMemCreate(B, prop, 0)          (kept live)
 *   free:N                        N frees of the most recent live allocations:
 *                                 cuMemFree_v2 (alloc, alloc_pitch,
 *                                 alloc_managed), cuMemFreeAsync (alloc_async,
 *                                 alloc_pool), cuMemFreeHost (host_alloc,
 *                                 alloc_host), cuMemRelease (vmm_create)
 *   free_all                      free:<number live>
 *   oom:B                         1 cuMemAlloc_v2(B), must return 2
 *   free_bad                      1 cuMemFree_v2(0x1000), must return 1
 *   copy_bad:B:N                  N cuMemcpyHtoD_v2 to 0x1000, each must
 *                                 return 1 (no allocation calls)
 *   h2d:B:N                       1 cuMemAlloc_v2(B), N cuMemcpyHtoD_v2,
 *                                 1 cuMemFree_v2
 *   d2h:B:N                       1 cuMemAlloc_v2(B), N cuMemcpyDtoH_v2,
 *                                 1 cuMemFree_v2
 *   d2d:B:N                       2 cuMemAlloc_v2(B), N cuMemcpyDtoD_v2,
 *                                 2 cuMemFree_v2
 *   h2d_async:B:N                 1 cuMemAlloc_v2(B), N cuMemcpyHtoDAsync_v2,
 *                                 1 cuMemFree_v2
 *   d2h_async:B:N                 1 cuMemAlloc_v2(B), N cuMemcpyDtoHAsync_v2,
 *                                 1 cuMemFree_v2
 *   d2d_async:B:N                 2 cuMemAlloc_v2(B), N cuMemcpyDtoDAsync_v2,
 *                                 2 cuMemFree_v2
 *   memcpy_default:B:N            2 cuMemAlloc_v2(B), N cuMemcpy, 2 cuMemFree_v2
 *   peer:B:N                      2 cuMemAlloc_v2(B), N cuMemcpyPeer,
 *                                 2 cuMemFree_v2
 *   copy2d:W:H:N                  1 cuMemAlloc_v2(W*H), N cuMemcpy2D_v2
 *                                 (host -> device, pitches W), 1 cuMemFree_v2
 *   copy3d:W:H:D:N                1 cuMemAlloc_v2(W*H*D), N cuMemcpy3D_v2
 *                                 (device -> host, pitches W, heights H),
 *                                 1 cuMemFree_v2
 *   sync:MS / sync_ptsz:MS        1 cuStreamSynchronize(_ptsz) sleeping MS ms
 *   ctx_sync:MS                   1 cuCtxSynchronize sleeping MS ms
 *   event_sync:MS                 1 cuEventSynchronize sleeping MS ms
 *   device:N                      1 cuDevicePrimaryCtxRetain(N), 1 cuCtxSetCurrent
 *                                 (later calls of this thread run on device N)
 *   ctx_create:N                  1 cuCtxCreate_v2(0, N): a new context on device N,
 *                                 pushed on this thread's context stack
 *   ctx_pop                       1 cuCtxPopCurrent_v2
 *   sleep:MS                      none (nanosleep)
 *   wait:PATH                     none (polls every 10 ms until PATH exists)
 *   ready                         none (prints "ready <pid>")
 *   counts                        none (prints the stand-in's non-zero
 *                                 per-symbol call counters on one line)
 *   exec                          none (prints "exec ok pid=<pid>", then
 *                                 re-executes this program with the steps
 *                                 after it: same PID and start time, a new
 *                                 image that calls cuInit again; must not be
 *                                 the last step)
 *
 * OS steps (no CUDA calls), for the per-process OS metrics:
 *   burn:MS                       spins on one CPU until this thread has used
 *                                 MS ms of CPU time
 *   fsync_write:B                 writes B bytes (1 MiB writes) to a new file in
 *                                 $NEUTRACER_SCENARIO_IO_DIR (default /var/tmp),
 *                                 fsyncs it, then unlinks it
 *   tcp_send:B                    sends B bytes over a loopback TCP connection to
 *                                 itself and reads them back (B sent and B
 *                                 received by this process)
 *
 * Host buffers of the copy steps are plain malloc(), never stand-in host
 * allocations.  The copy steps' temporary device buffers are allocated at the
 * start of the step and freed at its end, so they change allocation/free
 * counts but not the number of live allocations.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "standin_cuda.h"

enum op {
  OP_LAUNCH, OP_LAUNCH_PTSZ, OP_LAUNCHEX, OP_LAUNCHEX_PTSZ, OP_LAUNCH_KERNEL_HANDLE,
  OP_COOP, OP_COOP_PTSZ, OP_NAMES, OP_RELAUNCH, OP_GRAPH, OP_GRAPH_PTSZ,
  OP_ALLOC, OP_ALLOC_ASYNC, OP_ALLOC_POOL, OP_ALLOC_MANAGED, OP_ALLOC_PITCH,
  OP_HOST_ALLOC, OP_ALLOC_HOST, OP_VMM_CREATE,
  OP_FREE, OP_FREE_ALL, OP_OOM, OP_FREE_BAD, OP_COPY_BAD,
  OP_H2D, OP_D2H, OP_D2D, OP_H2D_ASYNC, OP_D2H_ASYNC, OP_D2D_ASYNC,
  OP_MEMCPY_DEFAULT, OP_PEER, OP_COPY2D, OP_COPY3D,
  OP_SYNC, OP_SYNC_PTSZ, OP_CTX_SYNC, OP_EVENT_SYNC, OP_SLEEP, OP_WAIT, OP_READY,
  OP_COUNTS, OP_DEVICE, OP_CTX_CREATE, OP_CTX_POP, OP_BURN, OP_FSYNC_WRITE, OP_TCP_SEND, OP_EXEC,
};

/* Argument shapes. */
enum shape {
  S_NONE,       /* step */
  S_NAME_N,     /* step:NAME:N */
  S_N,          /* step:N */
  S_B,          /* step:B (one number) */
  S_B_N,        /* step:B:N */
  S_W_H_N,      /* step:W:H:N */
  S_W_H_D_N,    /* step:W:H:D:N */
  S_PATH,       /* step:PATH */
};

static const struct {
  const char *name;
  enum op op;
  enum shape shape;
} k_steps[] = {
    {"launch", OP_LAUNCH, S_NAME_N},
    {"launch_ptsz", OP_LAUNCH_PTSZ, S_NAME_N},
    {"launchex", OP_LAUNCHEX, S_NAME_N},
    {"launchex_ptsz", OP_LAUNCHEX_PTSZ, S_NAME_N},
    {"launch_kernel_handle", OP_LAUNCH_KERNEL_HANDLE, S_NAME_N},
    {"coop", OP_COOP, S_NAME_N},
    {"coop_ptsz", OP_COOP_PTSZ, S_NAME_N},
    {"names", OP_NAMES, S_B_N},
    {"relaunch", OP_RELAUNCH, S_N},
    {"graph", OP_GRAPH, S_N},
    {"graph_ptsz", OP_GRAPH_PTSZ, S_N},
    {"alloc", OP_ALLOC, S_B_N},
    {"alloc_async", OP_ALLOC_ASYNC, S_B_N},
    {"alloc_pool", OP_ALLOC_POOL, S_B_N},
    {"alloc_managed", OP_ALLOC_MANAGED, S_B_N},
    {"alloc_pitch", OP_ALLOC_PITCH, S_W_H_N},
    {"host_alloc", OP_HOST_ALLOC, S_B_N},
    {"alloc_host", OP_ALLOC_HOST, S_B_N},
    {"vmm_create", OP_VMM_CREATE, S_B_N},
    {"free", OP_FREE, S_N},
    {"free_all", OP_FREE_ALL, S_NONE},
    {"oom", OP_OOM, S_B},
    {"free_bad", OP_FREE_BAD, S_NONE},
    {"copy_bad", OP_COPY_BAD, S_B_N},
    {"h2d", OP_H2D, S_B_N},
    {"d2h", OP_D2H, S_B_N},
    {"d2d", OP_D2D, S_B_N},
    {"h2d_async", OP_H2D_ASYNC, S_B_N},
    {"d2h_async", OP_D2H_ASYNC, S_B_N},
    {"d2d_async", OP_D2D_ASYNC, S_B_N},
    {"memcpy_default", OP_MEMCPY_DEFAULT, S_B_N},
    {"peer", OP_PEER, S_B_N},
    {"copy2d", OP_COPY2D, S_W_H_N},
    {"copy3d", OP_COPY3D, S_W_H_D_N},
    {"sync", OP_SYNC, S_B},
    {"sync_ptsz", OP_SYNC_PTSZ, S_B},
    {"ctx_sync", OP_CTX_SYNC, S_B},
    {"event_sync", OP_EVENT_SYNC, S_B},
    {"sleep", OP_SLEEP, S_B},
    {"wait", OP_WAIT, S_PATH},
    {"ready", OP_READY, S_NONE},
    {"counts", OP_COUNTS, S_NONE},
    {"device", OP_DEVICE, S_N},
    {"ctx_create", OP_CTX_CREATE, S_N},
    {"ctx_pop", OP_CTX_POP, S_NONE},
    {"burn", OP_BURN, S_B},
    {"fsync_write", OP_FSYNC_WRITE, S_B},
    {"tcp_send", OP_TCP_SEND, S_B},
    {"exec", OP_EXEC, S_NONE},
};

struct step {
  const char *text; /* as given */
  enum op op;
  char *name;       /* NAME or PATH */
  unsigned long long v[4];
  size_t nv;
};

enum live_kind { L_DEVICE, L_ASYNC, L_HOST, L_VMM };

struct live {
  unsigned long long addr; /* device pointer, host pointer or VMM handle */
  enum live_kind kind;
};

static struct live *g_live;
static size_t g_live_len, g_live_cap;

static CUmodule g_module;
static CUlibrary g_library;
static const char k_image[] = "neutracer-standin-fatbin";

/* Fake opaque objects (the stand-in never dereferences them). */
static char g_fake_graph_exec, g_fake_pool, g_fake_event, g_fake_ctx_a, g_fake_ctx_b;
static unsigned char g_fake_vmm_prop[64];

static const struct step *g_cur;
static char **g_argv; /* for exec: argv[0] and the steps after the current one */
static int g_next_arg;

#define LAUNCH_GRID 1, 1, 1
#define LAUNCH_BLOCK 128, 1, 1

static void usage_fail(const char *arg, const char *why) {
  fprintf(stderr, "neutracer-scenario: bad step '%s': %s\n", arg, why);
  exit(2);
}

static void check(CUresult rc, const char *call) {
  if (rc != CUDA_SUCCESS) {
    fprintf(stderr, "neutracer-scenario: step '%s': %s returned %d\n", g_cur->text, call,
            (int)rc);
    exit(1);
  }
}

static void expect(CUresult rc, CUresult want, const char *call) {
  if (rc != want) {
    fprintf(stderr, "neutracer-scenario: step '%s': %s returned %d, expected %d\n",
            g_cur->text, call, (int)rc, (int)want);
    exit(1);
  }
}

static int parse_num(const char *s, size_t len, unsigned long long *out) {
  if (len == 0 || len > 20) return 0;
  unsigned long long v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return 0;
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (ULLONG_MAX - d) / 10) return 0;
    v = v * 10 + d;
  }
  *out = v;
  return 1;
}

/* Parse ':'-separated numbers in s into st->v; exactly n expected. */
static void parse_nums(const char *arg, const char *s, size_t n, struct step *st) {
  size_t got = 0;
  for (;;) {
    const char *colon = strchr(s, ':');
    size_t len = colon ? (size_t)(colon - s) : strlen(s);
    if (got == n) usage_fail(arg, "too many fields");
    if (!parse_num(s, len, &st->v[got])) usage_fail(arg, "malformed number");
    got++;
    if (!colon) break;
    s = colon + 1;
  }
  if (got != n) usage_fail(arg, "too few fields");
  st->nv = n;
}

static void parse_step(const char *arg, struct step *st) {
  memset(st, 0, sizeof *st);
  st->text = arg;
  const char *colon = strchr(arg, ':');
  size_t klen = colon ? (size_t)(colon - arg) : strlen(arg);
  const char *rest = colon ? colon + 1 : NULL;
  for (size_t i = 0; i < sizeof k_steps / sizeof k_steps[0]; i++) {
    if (strlen(k_steps[i].name) != klen || strncmp(k_steps[i].name, arg, klen) != 0) continue;
    st->op = k_steps[i].op;
    switch (k_steps[i].shape) {
    case S_NONE:
      if (rest) usage_fail(arg, "takes no arguments");
      return;
    case S_PATH:
      if (!rest || !*rest) usage_fail(arg, "missing PATH");
      st->name = strdup(rest);
      return;
    case S_NAME_N: {
      if (!rest) usage_fail(arg, "expected NAME:COUNT");
      const char *last = strrchr(rest, ':');
      if (!last || last == rest) usage_fail(arg, "expected NAME:COUNT");
      st->name = strndup(rest, (size_t)(last - rest));
      parse_nums(arg, last + 1, 1, st);
      return;
    }
    case S_N:
    case S_B:
      if (!rest) usage_fail(arg, "missing number");
      parse_nums(arg, rest, 1, st);
      return;
    case S_B_N:
      if (!rest) usage_fail(arg, "expected BYTES:COUNT");
      parse_nums(arg, rest, 2, st);
      return;
    case S_W_H_N:
      if (!rest) usage_fail(arg, "expected WIDTH:HEIGHT:COUNT");
      parse_nums(arg, rest, 3, st);
      return;
    case S_W_H_D_N:
      if (!rest) usage_fail(arg, "expected WIDTH:HEIGHT:DEPTH:COUNT");
      parse_nums(arg, rest, 4, st);
      return;
    }
  }
  usage_fail(arg, "unknown step");
}

/* Semantic checks that do not need any CUDA call (exit 2 on failure). */
static void validate_step(const struct step *st) {
  unsigned long long tmp;
  switch (st->op) {
  case OP_H2D: case OP_D2H: case OP_D2D: case OP_H2D_ASYNC: case OP_D2H_ASYNC:
  case OP_D2D_ASYNC: case OP_MEMCPY_DEFAULT: case OP_PEER: case OP_COPY_BAD:
    if (st->v[0] == 0) usage_fail(st->text, "BYTES must be > 0");
    break;
  case OP_COPY2D:
    if (st->v[0] == 0 || st->v[1] == 0) usage_fail(st->text, "WIDTH/HEIGHT must be > 0");
    if (__builtin_mul_overflow(st->v[0], st->v[1], &tmp)) usage_fail(st->text, "too large");
    break;
  case OP_COPY3D:
    if (st->v[0] == 0 || st->v[1] == 0 || st->v[2] == 0)
      usage_fail(st->text, "WIDTH/HEIGHT/DEPTH must be > 0");
    if (__builtin_mul_overflow(st->v[0], st->v[1], &tmp) ||
        __builtin_mul_overflow(tmp, st->v[2], &tmp))
      usage_fail(st->text, "too large");
    break;
  case OP_SYNC: case OP_SYNC_PTSZ: case OP_CTX_SYNC: case OP_EVENT_SYNC:
    if (st->v[0] > UINT_MAX) usage_fail(st->text, "MS too large");
    break;
  case OP_NAMES:
    /* The index prefix is 9 bytes; the probe copies at most 4095 bytes and a NUL. */
    if (st->v[0] > 9999999) usage_fail(st->text, "N must be at most 9999999");
    if (st->v[1] < 9 || st->v[1] > 4095) usage_fail(st->text, "LEN must be 9..4095");
    break;
  default:
    break;
  }
}

static void live_push(unsigned long long addr, enum live_kind kind) {
  if (g_live_len == g_live_cap) {
    g_live_cap = g_live_cap ? g_live_cap * 2 : 64;
    g_live = realloc(g_live, g_live_cap * sizeof *g_live);
    if (!g_live) {
      perror("realloc");
      exit(1);
    }
  }
  g_live[g_live_len].addr = addr;
  g_live[g_live_len].kind = kind;
  g_live_len++;
}

static void free_recent(unsigned long long n) {
  if (n > g_live_len) {
    fprintf(stderr, "neutracer-scenario: step '%s': only %zu live allocations\n", g_cur->text,
            g_live_len);
    exit(2);
  }
  for (unsigned long long i = 0; i < n; i++) {
    struct live l = g_live[--g_live_len];
    switch (l.kind) {
    case L_DEVICE:
      check(cuMemFree_v2(l.addr), "cuMemFree_v2");
      break;
    case L_ASYNC:
      check(cuMemFreeAsync(l.addr, NULL), "cuMemFreeAsync");
      break;
    case L_HOST:
      check(cuMemFreeHost((void *)(uintptr_t)l.addr), "cuMemFreeHost");
      break;
    case L_VMM:
      check(cuMemRelease(l.addr), "cuMemRelease");
      break;
    }
  }
}

static CUfunction g_last_function; /* for relaunch */

static CUfunction module_function(const char *name) {
  if (!g_module) check(cuModuleLoadData(&g_module, k_image), "cuModuleLoadData");
  CUfunction f = NULL;
  check(cuModuleGetFunction(&f, g_module, name), "cuModuleGetFunction");
  g_last_function = f;
  return f;
}

static CUkernel library_kernel(const char *name) {
  if (!g_library)
    check(cuLibraryLoadData(&g_library, k_image, NULL, NULL, 0, NULL, NULL, 0),
          "cuLibraryLoadData");
  CUkernel k = NULL;
  check(cuLibraryGetKernel(&k, g_library, name), "cuLibraryGetKernel");
  return k;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) {
    perror("malloc");
    exit(1);
  }
  memset(p, 0xab, n);
  return p;
}

static CUdeviceptr dev_alloc(size_t n) {
  CUdeviceptr p = 0;
  check(cuMemAlloc_v2(&p, n), "cuMemAlloc_v2");
  return p;
}

static void sleep_ms(unsigned long long ms) {
  struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static void os_fail(const char *what) {
  fprintf(stderr, "neutracer-scenario: step '%s': %s: %s\n", g_cur->text, what, strerror(errno));
  exit(1);
}

static double thread_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void burn_cpu_ms(unsigned long long ms) {
  const double end = thread_cpu_ms() + (double)ms;
  volatile unsigned long long sink = 0;
  while (thread_cpu_ms() < end)
    for (int i = 0; i < 10000; i++) sink += (unsigned long long)i;
}

static void fsync_write(unsigned long long bytes) {
  const char *dir = getenv("NEUTRACER_SCENARIO_IO_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/neutracer-scenario-%ld.dat", dir && *dir ? dir : "/var/tmp",
           (long)getpid());
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) os_fail(path);
  static char chunk[1 << 20];
  memset(chunk, 0x5a, sizeof chunk);
  while (bytes > 0) {
    const size_t n = bytes < sizeof chunk ? (size_t)bytes : sizeof chunk;
    const ssize_t wrote = write(fd, chunk, n);
    if (wrote <= 0) os_fail("write");
    bytes -= (unsigned long long)wrote;
  }
  if (fsync(fd) != 0) os_fail("fsync");
  close(fd);
  unlink(path);
}

static void tcp_send_to_self(unsigned long long bytes) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof addr;
  if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 ||
      listen(listener, 1) != 0 || getsockname(listener, (struct sockaddr *)&addr, &len) != 0)
    os_fail("listen on loopback");
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client < 0 || connect(client, (struct sockaddr *)&addr, sizeof addr) != 0)
    os_fail("connect");
  const int server = accept(listener, NULL, NULL);
  if (server < 0) os_fail("accept");
  static char chunk[64 << 10];
  memset(chunk, 0x42, sizeof chunk);
  unsigned long long sent = 0, received = 0;
  /* Send and drain in turns, so neither side's buffer fills up. */
  while (received < bytes) {
    if (sent < bytes) {
      const size_t n = bytes - sent < sizeof chunk ? (size_t)(bytes - sent) : sizeof chunk;
      const ssize_t got = send(client, chunk, n, 0);
      if (got <= 0) os_fail("send");
      sent += (unsigned long long)got;
    }
    char in[64 << 10];
    const ssize_t got = recv(server, in, sizeof in, 0);
    if (got <= 0) os_fail("recv");
    received += (unsigned long long)got;
  }
  close(client);
  close(server);
  close(listener);
}

static void run_step(const struct step *st) {
  g_cur = st;
  unsigned long long n, i;
  CUstream stream = NULL;
  switch (st->op) {
  case OP_RELAUNCH:
    if (!g_last_function) {
      fprintf(stderr, "relaunch: no earlier launch step looked up a function\n");
      exit(2);
    }
    for (i = 0; i < st->v[0]; i++)
      check(cuLaunchKernel(g_last_function, LAUNCH_GRID, LAUNCH_BLOCK, 0, stream, NULL, NULL),
            "cuLaunchKernel");
    break;
  case OP_NAMES: {
    /* The names differ in their first bytes, so the stand-in's lookups stay cheap. */
    char *name = xmalloc(st->v[1] + 1);
    memset(name, 'n', st->v[1]);
    name[st->v[1]] = '\0';
    for (i = 0; i < st->v[0]; i++) {
      char prefix[10];
      snprintf(prefix, sizeof prefix, "k%07u_", (unsigned)(i % 10000000u));
      memcpy(name, prefix, 9);
      CUfunction f = module_function(name);
      check(cuLaunchKernel(f, LAUNCH_GRID, LAUNCH_BLOCK, 0, stream, NULL, NULL),
            "cuLaunchKernel");
    }
    free(name);
    printf("%s ok\n", st->text);
    break;
  }
  case OP_LAUNCH:
  case OP_LAUNCH_PTSZ:
  case OP_COOP:
  case OP_COOP_PTSZ: {
    CUfunction f = module_function(st->name);
    n = st->v[0];
    for (i = 0; i < n; i++) {
      if (st->op == OP_LAUNCH)
        check(cuLaunchKernel(f, LAUNCH_GRID, LAUNCH_BLOCK, 0, stream, NULL, NULL),
              "cuLaunchKernel");
      else if (st->op == OP_LAUNCH_PTSZ)
        check(cuLaunchKernel_ptsz(f, LAUNCH_GRID, LAUNCH_BLOCK, 0, stream, NULL, NULL),
              "cuLaunchKernel_ptsz");
      else if (st->op == OP_COOP)
        check(cuLaunchCooperativeKernel(f, LAUNCH_GRID, LAUNCH_BLOCK, 0, stream, NULL),
              "cuLaunchCooperativeKernel");
      else
        check(cuLaunchCooperativeKernel_ptsz(f, LAUNCH_GRID, LAUNCH_BLOCK, 0, stream, NULL),
              "cuLaunchCooperativeKernel_ptsz");
    }
    printf("%s ok function=%p\n", st->text, (void *)f);
    break;
  }
  case OP_LAUNCHEX:
  case OP_LAUNCHEX_PTSZ: {
    CUkernel k = library_kernel(st->name);
    CUfunction f = NULL;
    check(cuKernelGetFunction(&f, k), "cuKernelGetFunction");
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = 1; cfg.gridDimY = 1; cfg.gridDimZ = 1;
    cfg.blockDimX = 128; cfg.blockDimY = 1; cfg.blockDimZ = 1;
    cfg.sharedMemBytes = 0;
    cfg.hStream = stream;
    cfg.attrs = NULL;
    cfg.numAttrs = 0;
    n = st->v[0];
    for (i = 0; i < n; i++) {
      if (st->op == OP_LAUNCHEX)
        check(cuLaunchKernelEx(&cfg, f, NULL, NULL), "cuLaunchKernelEx");
      else
        check(cuLaunchKernelEx_ptsz(&cfg, f, NULL, NULL), "cuLaunchKernelEx_ptsz");
    }
    printf("%s ok kernel=%p function=%p\n", st->text, (void *)k, (void *)f);
    break;
  }
  case OP_LAUNCH_KERNEL_HANDLE: {
    CUkernel k = library_kernel(st->name);
    n = st->v[0];
    for (i = 0; i < n; i++)
      check(cuLaunchKernel((CUfunction)k, LAUNCH_GRID, LAUNCH_BLOCK, 0, stream, NULL, NULL),
            "cuLaunchKernel");
    printf("%s ok kernel=%p\n", st->text, (void *)k);
    break;
  }
  case OP_GRAPH:
  case OP_GRAPH_PTSZ: {
    CUgraphExec g = (CUgraphExec)(void *)&g_fake_graph_exec;
    n = st->v[0];
    for (i = 0; i < n; i++) {
      if (st->op == OP_GRAPH)
        check(cuGraphLaunch(g, stream), "cuGraphLaunch");
      else
        check(cuGraphLaunch_ptsz(g, stream), "cuGraphLaunch_ptsz");
    }
    printf("%s ok\n", st->text);
    break;
  }
  case OP_ALLOC:
  case OP_ALLOC_ASYNC:
  case OP_ALLOC_POOL:
  case OP_ALLOC_MANAGED:
  case OP_HOST_ALLOC:
  case OP_ALLOC_HOST:
  case OP_VMM_CREATE: {
    size_t bytes = st->v[0];
    n = st->v[1];
    for (i = 0; i < n; i++) {
      CUdeviceptr d = 0;
      void *h = NULL;
      switch (st->op) {
      case OP_ALLOC:
        check(cuMemAlloc_v2(&d, bytes), "cuMemAlloc_v2");
        live_push(d, L_DEVICE);
        break;
      case OP_ALLOC_ASYNC:
        check(cuMemAllocAsync(&d, bytes, stream), "cuMemAllocAsync");
        live_push(d, L_ASYNC);
        break;
      case OP_ALLOC_POOL:
        check(cuMemAllocFromPoolAsync(&d, bytes, (CUmemoryPool)(void *)&g_fake_pool, stream),
              "cuMemAllocFromPoolAsync");
        live_push(d, L_ASYNC);
        break;
      case OP_ALLOC_MANAGED:
        check(cuMemAllocManaged(&d, bytes, 1 /* CU_MEM_ATTACH_GLOBAL */),
              "cuMemAllocManaged");
        live_push(d, L_DEVICE);
        break;
      case OP_HOST_ALLOC:
        check(cuMemHostAlloc(&h, bytes, 0), "cuMemHostAlloc");
        memset(h, 0x5a, bytes);
        live_push((unsigned long long)(uintptr_t)h, L_HOST);
        break;
      case OP_ALLOC_HOST:
        check(cuMemAllocHost_v2(&h, bytes), "cuMemAllocHost_v2");
        memset(h, 0x5a, bytes);
        live_push((unsigned long long)(uintptr_t)h, L_HOST);
        break;
      case OP_VMM_CREATE: {
        CUmemGenericAllocationHandle hd = 0;
        check(cuMemCreate(&hd, bytes, g_fake_vmm_prop, 0), "cuMemCreate");
        live_push(hd, L_VMM);
        break;
      }
      default:
        break;
      }
    }
    printf("%s ok live=%zu\n", st->text, g_live_len);
    break;
  }
  case OP_ALLOC_PITCH: {
    n = st->v[2];
    size_t pitch = 0;
    for (i = 0; i < n; i++) {
      CUdeviceptr d = 0;
      check(cuMemAllocPitch_v2(&d, &pitch, st->v[0], st->v[1], 4), "cuMemAllocPitch_v2");
      live_push(d, L_DEVICE);
    }
    printf("%s ok pitch=%zu live=%zu\n", st->text, pitch, g_live_len);
    break;
  }
  case OP_FREE:
    free_recent(st->v[0]);
    printf("%s ok live=%zu\n", st->text, g_live_len);
    break;
  case OP_FREE_ALL:
    free_recent(g_live_len);
    printf("%s ok live=%zu\n", st->text, g_live_len);
    break;
  case OP_OOM: {
    const CUdeviceptr sentinel = 0x5e5e5e5e5e5eULL;
    CUdeviceptr d = sentinel;
    expect(cuMemAlloc_v2(&d, st->v[0]), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc_v2");
    if (d != sentinel) {
      fprintf(stderr, "neutracer-scenario: step '%s': *dptr modified on failure\n", st->text);
      exit(1);
    }
    printf("%s ok rc=2\n", st->text);
    break;
  }
  case OP_FREE_BAD:
    expect(cuMemFree_v2(0x1000), CUDA_ERROR_INVALID_VALUE, "cuMemFree_v2");
    printf("%s ok rc=1\n", st->text);
    break;
  case OP_COPY_BAD: {
    void *h = xmalloc(st->v[0]);
    for (i = 0; i < st->v[1]; i++)
      expect(cuMemcpyHtoD_v2(0x1000, h, st->v[0]), CUDA_ERROR_INVALID_VALUE,
             "cuMemcpyHtoD_v2");
    free(h);
    printf("%s ok rc=1\n", st->text);
    break;
  }
  case OP_H2D:
  case OP_D2H:
  case OP_H2D_ASYNC:
  case OP_D2H_ASYNC: {
    size_t bytes = st->v[0];
    CUdeviceptr d = dev_alloc(bytes);
    void *h = xmalloc(bytes);
    for (i = 0; i < st->v[1]; i++) {
      switch (st->op) {
      case OP_H2D: check(cuMemcpyHtoD_v2(d, h, bytes), "cuMemcpyHtoD_v2"); break;
      case OP_D2H: check(cuMemcpyDtoH_v2(h, d, bytes), "cuMemcpyDtoH_v2"); break;
      case OP_H2D_ASYNC:
        check(cuMemcpyHtoDAsync_v2(d, h, bytes, stream), "cuMemcpyHtoDAsync_v2");
        break;
      default:
        check(cuMemcpyDtoHAsync_v2(h, d, bytes, stream), "cuMemcpyDtoHAsync_v2");
        break;
      }
    }
    free(h);
    check(cuMemFree_v2(d), "cuMemFree_v2");
    printf("%s ok\n", st->text);
    break;
  }
  case OP_D2D:
  case OP_D2D_ASYNC:
  case OP_MEMCPY_DEFAULT:
  case OP_PEER: {
    size_t bytes = st->v[0];
    CUdeviceptr dst = dev_alloc(bytes);
    CUdeviceptr src = dev_alloc(bytes);
    CUcontext ca = (CUcontext)(void *)&g_fake_ctx_a, cb = (CUcontext)(void *)&g_fake_ctx_b;
    for (i = 0; i < st->v[1]; i++) {
      switch (st->op) {
      case OP_D2D: check(cuMemcpyDtoD_v2(dst, src, bytes), "cuMemcpyDtoD_v2"); break;
      case OP_D2D_ASYNC:
        check(cuMemcpyDtoDAsync_v2(dst, src, bytes, stream), "cuMemcpyDtoDAsync_v2");
        break;
      case OP_MEMCPY_DEFAULT: check(cuMemcpy(dst, src, bytes), "cuMemcpy"); break;
      default: check(cuMemcpyPeer(dst, ca, src, cb, bytes), "cuMemcpyPeer"); break;
      }
    }
    check(cuMemFree_v2(src), "cuMemFree_v2");
    check(cuMemFree_v2(dst), "cuMemFree_v2");
    printf("%s ok\n", st->text);
    break;
  }
  case OP_COPY2D: {
    size_t w = st->v[0], hgt = st->v[1];
    CUdeviceptr d = dev_alloc(w * hgt);
    void *h = xmalloc(w * hgt);
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = h;
    c.srcPitch = w;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = d;
    c.dstPitch = w;
    c.WidthInBytes = w;
    c.Height = hgt;
    for (i = 0; i < st->v[2]; i++) check(cuMemcpy2D_v2(&c), "cuMemcpy2D_v2");
    free(h);
    check(cuMemFree_v2(d), "cuMemFree_v2");
    printf("%s ok\n", st->text);
    break;
  }
  case OP_COPY3D: {
    size_t w = st->v[0], hgt = st->v[1], dep = st->v[2];
    CUdeviceptr d = dev_alloc(w * hgt * dep);
    void *h = xmalloc(w * hgt * dep);
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = d;
    c.srcPitch = w;
    c.srcHeight = hgt;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = h;
    c.dstPitch = w;
    c.dstHeight = hgt;
    c.WidthInBytes = w;
    c.Height = hgt;
    c.Depth = dep;
    for (i = 0; i < st->v[3]; i++) check(cuMemcpy3D_v2(&c), "cuMemcpy3D_v2");
    free(h);
    check(cuMemFree_v2(d), "cuMemFree_v2");
    printf("%s ok\n", st->text);
    break;
  }
  case OP_SYNC:
    neutracer_standin_set_sync_ms((unsigned)st->v[0]);
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    printf("%s ok\n", st->text);
    break;
  case OP_SYNC_PTSZ:
    neutracer_standin_set_sync_ms((unsigned)st->v[0]);
    check(cuStreamSynchronize_ptsz(stream), "cuStreamSynchronize_ptsz");
    printf("%s ok\n", st->text);
    break;
  case OP_CTX_SYNC:
    neutracer_standin_set_sync_ms((unsigned)st->v[0]);
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    printf("%s ok\n", st->text);
    break;
  case OP_EVENT_SYNC:
    neutracer_standin_set_sync_ms((unsigned)st->v[0]);
    check(cuEventSynchronize((CUevent)(void *)&g_fake_event), "cuEventSynchronize");
    printf("%s ok\n", st->text);
    break;
  case OP_DEVICE: {
    CUcontext ctx = NULL;
    check(cuDevicePrimaryCtxRetain(&ctx, (CUdevice)st->v[0]), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    printf("%s ok ctx=%p\n", st->text, (void *)ctx);
    break;
  }
  case OP_CTX_CREATE: {
    CUcontext ctx = NULL;
    check(cuCtxCreate_v2(&ctx, 0, (CUdevice)st->v[0]), "cuCtxCreate_v2");
    printf("%s ok ctx=%p\n", st->text, (void *)ctx);
    break;
  }
  case OP_CTX_POP: {
    CUcontext ctx = NULL;
    check(cuCtxPopCurrent_v2(&ctx), "cuCtxPopCurrent_v2");
    printf("%s ok ctx=%p\n", st->text, (void *)ctx);
    break;
  }
  case OP_SLEEP:
    sleep_ms(st->v[0]);
    printf("%s ok\n", st->text);
    break;
  case OP_WAIT:
    printf("waiting %s\n", st->name);
    fflush(stdout);
    while (access(st->name, F_OK) != 0) sleep_ms(10);
    break;
  case OP_READY:
    printf("ready %ld\n", (long)getpid());
    break;
  case OP_BURN:
    burn_cpu_ms(st->v[0]);
    printf("%s ok\n", st->text);
    break;
  case OP_FSYNC_WRITE:
    fsync_write(st->v[0]);
    printf("%s ok\n", st->text);
    break;
  case OP_TCP_SEND:
    tcp_send_to_self(st->v[0]);
    printf("%s ok\n", st->text);
    break;
  case OP_EXEC: {
    /* The new image gets argv[0] and the remaining steps; nothing of this image survives. */
    g_argv[g_next_arg - 1] = g_argv[0];
    printf("%s ok pid=%ld\n", st->text, (long)getpid());
    fflush(stdout);
    execv("/proc/self/exe", &g_argv[g_next_arg - 1]);
    os_fail("execv /proc/self/exe");
    break;
  }
  case OP_COUNTS: {
    fputs("counts", stdout);
    const char *nm;
    for (unsigned k = 0; (nm = neutracer_standin_api_name(k)) != NULL; k++) {
      unsigned long long c = neutracer_standin_call_count(nm);
      if (c) printf(" %s=%llu", nm, c);
    }
    putchar('\n');
    break;
  }
  }
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s STEP...  (see tests/standin/README.md)\n", argv[0]);
    return 2;
  }
  struct step *steps = calloc((size_t)argc, sizeof *steps);
  if (!steps) return 1;
  for (int a = 1; a < argc; a++) {
    parse_step(argv[a], &steps[a - 1]);
    validate_step(&steps[a - 1]);
    if (steps[a - 1].op == OP_EXEC && a == argc - 1)
      usage_fail(argv[a], "needs steps after it to run in the new image");
  }
  g_argv = argv;
  struct step init = {.text = "<init>"};
  g_cur = &init;
  check(cuInit(0), "cuInit");
  for (int a = 1; a < argc; a++) {
    g_next_arg = a + 1;
    run_step(&steps[a - 1]);
  }
  return 0;
}
