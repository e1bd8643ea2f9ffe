// SPDX-License-Identifier: Apache-2.0
/*
 * Stand-in CUDA driver for tests on machines without a GPU.
 *
 * Built as a shared library whose file name is exactly "libcuda.so.1".  It
 * exports a subset of the CUDA driver API with the real x86-64 SysV C
 * signatures (argument positions and types as in cuda.h), so that
 * neutracerd's uprobes/uretprobes can attach to these symbols by name and read
 * arguments and return values exactly as they would on the real driver.
 *
 * Behaviour (simulated, deterministic):
 *   - Device, managed, pitched and VMM memory is *simulated*: addresses come
 *     from a bump allocator starting at 0x7e0000000000, 512-byte aligned,
 *     never reused, and are never dereferenced.  Host allocations
 *     (cuMemHostAlloc / cuMemAllocHost_v2) return real malloc()ed memory.
 *   - Device capacity: env NEUTRACER_STANDIN_CAPACITY (bytes, default 1 GiB).
 *     A device-side allocation whose request would exceed the capacity returns
 *     CUDA_ERROR_OUT_OF_MEMORY (2) and leaves the output untouched.
 *   - Copies never touch memory; a copy naming an unknown device address (or a
 *     range that runs past the end of its allocation) returns
 *     CUDA_ERROR_INVALID_VALUE (1).
 *   - Synchronisation calls sleep for the number of milliseconds set with
 *     neutracer_standin_set_sync_ms() (a stand-in-only helper, not CUDA API).
 *
 * Every exported function is noinline/used, and exported functions never call
 * each other (only static helpers), so every API call enters its own symbol.
 * Each export bumps its own call counter (neutracer_standin_call_count()),
 * which also keeps twin bodies (e.g. cuLaunchKernel / cuLaunchKernel_ptsz)
 * distinct so no identical-code folding can merge their addresses.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CUAPI __attribute__((visibility("default"), noinline, used))

#include "standin_cuda.h"

/* ------------------------------------------------------------------------ */
/* Per-symbol call counters                                                  */
/* ------------------------------------------------------------------------ */

#define STANDIN_APIS(X)                                                        \
  X(cuInit) X(cuDriverGetVersion)                                              \
  X(cuLaunchKernel) X(cuLaunchKernel_ptsz)                                     \
  X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz)                                 \
  X(cuLaunchCooperativeKernel) X(cuLaunchCooperativeKernel_ptsz)               \
  X(cuGraphLaunch) X(cuGraphLaunch_ptsz)                                       \
  X(cuModuleLoadData) X(cuModuleGetFunction)                                   \
  X(cuLibraryLoadData) X(cuLibraryGetKernel) X(cuKernelGetFunction)            \
  X(cuMemAlloc_v2) X(cuMemAllocPitch_v2)                                       \
  X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz)                                   \
  X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz)                   \
  X(cuMemAllocManaged) X(cuMemHostAlloc) X(cuMemAllocHost_v2) X(cuMemCreate)   \
  X(cuMemFree_v2) X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz)                     \
  X(cuMemFreeHost) X(cuMemRelease)                                             \
  X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2) X(cuMemcpyDtoD_v2)                     \
  X(cuMemcpyHtoD_v2_ptds) X(cuMemcpyDtoH_v2_ptds) X(cuMemcpyDtoD_v2_ptds)      \
  X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoDAsync_v2)      \
  X(cuMemcpyHtoDAsync_v2_ptsz) X(cuMemcpyDtoHAsync_v2_ptsz)                    \
  X(cuMemcpyDtoDAsync_v2_ptsz)                                                 \
  X(cuMemcpy) X(cuMemcpy_ptds) X(cuMemcpyAsync) X(cuMemcpyAsync_ptsz)          \
  X(cuMemcpyPeer) X(cuMemcpyPeer_ptds)                                         \
  X(cuMemcpyPeerAsync) X(cuMemcpyPeerAsync_ptsz)                               \
  X(cuMemcpy2D_v2) X(cuMemcpy2D_v2_ptds)                                       \
  X(cuMemcpy2DUnaligned_v2) X(cuMemcpy2DUnaligned_v2_ptds)                     \
  X(cuMemcpy2DAsync_v2) X(cuMemcpy2DAsync_v2_ptsz)                             \
  X(cuMemcpy3D_v2) X(cuMemcpy3D_v2_ptds)                                       \
  X(cuMemcpy3DAsync_v2) X(cuMemcpy3DAsync_v2_ptsz)                             \
  X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz)                           \
  X(cuCtxSynchronize) X(cuEventSynchronize)                                    \
  X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuCtxCreate_v2)             \
  X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2)

enum standin_api_id {
#define X(n) API_##n,
  STANDIN_APIS(X)
#undef X
  API__COUNT
};

static const char *const g_api_names[API__COUNT] = {
#define X(n) #n,
    STANDIN_APIS(X)
#undef X
};

static unsigned long long g_calls[API__COUNT];

/* Out-of-line on purpose: calling it makes every export a non-leaf function,
 * so even trivial exports get a full `push %rbp; mov %rsp,%rbp` prologue. */
static __attribute__((noinline)) void count_call(int id) {
  __atomic_fetch_add(&g_calls[id], 1ULL, __ATOMIC_RELAXED);
}

#define COUNT_CALL(n) count_call(API_##n)

/* ------------------------------------------------------------------------ */
/* Global state                                                              */
/* ------------------------------------------------------------------------ */

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_sync_ms;

#define SIM_BASE 0x7e0000000000ULL
#define SIM_ALIGN 512ULL
#define DEFAULT_CAPACITY (1ULL << 30)

static unsigned long long g_next_addr = SIM_BASE;
static unsigned long long g_capacity;
static int g_capacity_init;
static unsigned long long g_device_in_use;

enum alloc_kind {
  KIND_DEVICE = 1,  /* cuMemAlloc_v2 */
  KIND_PITCH,       /* cuMemAllocPitch_v2 */
  KIND_ASYNC,       /* cuMemAllocAsync(_ptsz) */
  KIND_POOL,        /* cuMemAllocFromPoolAsync(_ptsz) */
  KIND_MANAGED,     /* cuMemAllocManaged */
  KIND_VMM,         /* cuMemCreate (handle, not an address) */
  KIND_HOST,        /* cuMemHostAlloc / cuMemAllocHost_v2 (real memory) */
};

struct alloc_rec {
  unsigned long long addr;
  unsigned long long size;
  int kind;
};

/* Simulated (device/pitch/async/pool/managed/vmm) allocations: addresses are
 * handed out in increasing order, so appending keeps the array sorted. */
static struct alloc_rec *g_sim;
static size_t g_sim_len, g_sim_cap;
/* Host allocations (real malloc pointers, unsorted). */
static struct alloc_rec *g_host;
static size_t g_host_len, g_host_cap;

/* Opaque handle tokens. */
enum token_kind { TOK_MODULE = 1, TOK_FUNCTION, TOK_LIBRARY, TOK_KERNEL };

struct token {
  int kind;
  char *name;           /* function / kernel name */
  struct token *parent; /* module or library */
  struct token *func;   /* TOK_KERNEL: its CUfunction (created lazily) */
  struct token *next;   /* next child of the same parent */
  struct token *children;
};

static struct token **g_tokens;
static size_t g_tokens_len, g_tokens_cap;

/* ------------------------------------------------------------------------ */
/* Static helpers (never exported)                                           */
/* ------------------------------------------------------------------------ */

static int grow(void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 1;
  size_t ncap = *cap ? *cap * 2 : 64;
  while (ncap < need) ncap *= 2;
  void *p = realloc(*arr, ncap * elem);
  if (!p) return 0;
  *arr = p;
  *cap = ncap;
  return 1;
}

static void capacity_init_locked(void) {
  if (g_capacity_init) return;
  g_capacity_init = 1;
  g_capacity = DEFAULT_CAPACITY;
  const char *s = getenv("NEUTRACER_STANDIN_CAPACITY");
  if (s && *s >= '0' && *s <= '9') {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == 0 && end && *end == '\0') g_capacity = v;
  }
}

static unsigned long long round_up(unsigned long long v, unsigned long long a) {
  return (v + a - 1) / a * a;
}

/* Reserve a simulated range; returns CUDA_SUCCESS and the address in *out. */
static CUresult sim_alloc(unsigned long long size, int kind, unsigned long long *out) {
  if (!out || size == 0) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&g_lock);
  capacity_init_locked();
  if (size > g_capacity || g_device_in_use > g_capacity - size) {
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  } else if (!grow((void **)&g_sim, &g_sim_cap, g_sim_len + 1, sizeof *g_sim)) {
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  } else {
    unsigned long long addr = g_next_addr;
    g_next_addr += round_up(size, SIM_ALIGN);
    g_sim[g_sim_len].addr = addr;
    g_sim[g_sim_len].size = size;
    g_sim[g_sim_len].kind = kind;
    g_sim_len++;
    g_device_in_use += size;
    *out = addr;
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

/* Index of the simulated allocation containing addr, or -1.  Locked. */
static long sim_find_containing_locked(unsigned long long addr) {
  size_t lo = 0, hi = g_sim_len;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g_sim[mid].addr <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return -1;
  const struct alloc_rec *r = &g_sim[lo - 1];
  if (addr - r->addr < r->size) return (long)(lo - 1);
  return -1;
}

/* Free a simulated allocation that must start exactly at addr and whose kind
 * is accepted by the mask (bit per kind). */
static CUresult sim_free(unsigned long long addr, unsigned kind_mask) {
  CUresult rc = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_lock);
  long i = sim_find_containing_locked(addr);
  if (i >= 0 && g_sim[i].addr == addr && (kind_mask & (1u << g_sim[i].kind))) {
    g_device_in_use -= g_sim[i].size;
    memmove(&g_sim[i], &g_sim[i + 1], (g_sim_len - (size_t)i - 1) * sizeof *g_sim);
    g_sim_len--;
    rc = CUDA_SUCCESS;
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

#define DEVPTR_KINDS                                                           \
  ((1u << KIND_DEVICE) | (1u << KIND_PITCH) | (1u << KIND_ASYNC) |             \
   (1u << KIND_POOL) | (1u << KIND_MANAGED))

/* Is [addr, addr+n) inside one live device-pointer allocation? */
static int dev_range_ok(unsigned long long addr, unsigned long long n) {
  int ok = 0;
  pthread_mutex_lock(&g_lock);
  long i = sim_find_containing_locked(addr);
  if (i >= 0 && (DEVPTR_KINDS & (1u << g_sim[i].kind))) {
    unsigned long long room = g_sim[i].size - (addr - g_sim[i].addr);
    ok = n <= room;
  }
  pthread_mutex_unlock(&g_lock);
  return ok;
}

/* Is [addr, addr+n) inside one live stand-in host allocation? */
static int host_range_ok(unsigned long long addr, unsigned long long n) {
  int ok = 0;
  pthread_mutex_lock(&g_lock);
  for (size_t i = g_host_len; i-- > 0;) {
    const struct alloc_rec *r = &g_host[i];
    if (addr >= r->addr && addr - r->addr < r->size) {
      ok = n <= r->size - (addr - r->addr);
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
  return ok;
}

static CUresult host_alloc(void **pp, size_t size) {
  if (!pp || size == 0) return CUDA_ERROR_INVALID_VALUE;
  void *p = malloc(size);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_lock);
  if (!grow((void **)&g_host, &g_host_cap, g_host_len + 1, sizeof *g_host)) {
    pthread_mutex_unlock(&g_lock);
    free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  g_host[g_host_len].addr = (unsigned long long)(uintptr_t)p;
  g_host[g_host_len].size = size;
  g_host[g_host_len].kind = KIND_HOST;
  g_host_len++;
  pthread_mutex_unlock(&g_lock);
  *pp = p;
  return CUDA_SUCCESS;
}

static CUresult host_free(void *p) {
  unsigned long long a = (unsigned long long)(uintptr_t)p;
  int found = 0;
  pthread_mutex_lock(&g_lock);
  for (size_t i = g_host_len; i-- > 0;) {
    if (g_host[i].addr == a) {
      g_host[i] = g_host[g_host_len - 1];
      g_host_len--;
      found = 1;
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
  if (!found) return CUDA_ERROR_INVALID_VALUE;
  free(p);
  return CUDA_SUCCESS;
}

static struct token *token_new_locked(int kind, struct token *parent, const char *name) {
  if (!grow((void **)&g_tokens, &g_tokens_cap, g_tokens_len + 1, sizeof *g_tokens)) return NULL;
  struct token *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->kind = kind;
  t->parent = parent;
  if (name) {
    t->name = strdup(name);
    if (!t->name) {
      free(t);
      return NULL;
    }
  }
  if (parent) {
    t->next = parent->children;
    parent->children = t;
  }
  g_tokens[g_tokens_len++] = t;
  return t;
}

static int token_valid_locked(const void *p, int kind) {
  if (!p) return 0;
  for (size_t i = 0; i < g_tokens_len; i++)
    if (g_tokens[i] == p) return g_tokens[i]->kind == kind;
  return 0;
}

static CUresult new_container(void **out, const void *image, int kind) {
  if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_lock);
  struct token *t = token_new_locked(kind, NULL, NULL);
  pthread_mutex_unlock(&g_lock);
  if (!t) return CUDA_ERROR_OUT_OF_MEMORY;
  *out = t;
  return CUDA_SUCCESS;
}

/* Names starting with this prefix are "not in the image". */
#define NOTFOUND_PREFIX "__standin_notfound"

static CUresult get_child(void **out, const void *container, int container_kind,
                          int child_kind, const char *name) {
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&g_lock);
  if (!token_valid_locked(container, container_kind)) {
    rc = CUDA_ERROR_INVALID_HANDLE;
  } else if (strncmp(name, NOTFOUND_PREFIX, sizeof NOTFOUND_PREFIX - 1) == 0) {
    rc = CUDA_ERROR_NOT_FOUND;
  } else {
    struct token *c = (struct token *)container;
    struct token *t = c->children;
    while (t && strcmp(t->name, name) != 0) t = t->next;
    if (!t) t = token_new_locked(child_kind, c, name);
    if (!t)
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    else
      *out = t;
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

static CUresult kernel_get_function(CUfunction *out, CUkernel k) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&g_lock);
  if (!token_valid_locked(k, TOK_KERNEL)) {
    rc = CUDA_ERROR_INVALID_HANDLE;
  } else {
    struct token *kt = (struct token *)k;
    if (!kt->func) {
      /* Not linked into any parent list: it belongs to the kernel only. */
      kt->func = token_new_locked(TOK_FUNCTION, NULL, kt->name);
    }
    if (!kt->func)
      rc = CUDA_ERROR_OUT_OF_MEMORY;
    else
      *out = (CUfunction)kt->func;
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

/* CUDA 12 accepts either a CUfunction or a CUkernel wherever a CUfunction is
 * expected by the launch APIs. */
static CUresult launch_check(const void *f, unsigned gx, unsigned gy, unsigned gz,
                             unsigned bx, unsigned by, unsigned bz) {
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_lock);
  int ok = token_valid_locked(f, TOK_FUNCTION) || token_valid_locked(f, TOK_KERNEL);
  pthread_mutex_unlock(&g_lock);
  if (!ok) return CUDA_ERROR_INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

static CUresult launch_ex_check(const CUlaunchConfig *c, const void *f) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  if (c->numAttrs && !c->attrs) return CUDA_ERROR_INVALID_VALUE;
  return launch_check(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                      c->blockDimY, c->blockDimZ);
}

static CUresult copy_check(int dst_is_dev, unsigned long long dst, int src_is_dev,
                           unsigned long long src, size_t n) {
  if (dst_is_dev ? !dev_range_ok(dst, n) : (dst == 0)) return CUDA_ERROR_INVALID_VALUE;
  if (src_is_dev ? !dev_range_ok(src, n) : (src == 0)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

/* Unified-addressing pointer: a live device allocation or stand-in host
 * allocation. */
static int unified_ok(unsigned long long p, unsigned long long n) {
  return dev_range_ok(p, n) || host_range_ok(p, n);
}

static CUresult unified_copy_check(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  if (!unified_ok(dst, n) || !unified_ok(src, n)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

/* One side of a 2D/3D copy.  start = byte offset of the first element,
 * extent = bytes spanned from there. */
static CUresult side_check(CUmemorytype t, const void *host, CUdeviceptr dev,
                           CUarray arr, unsigned long long start,
                           unsigned long long extent) {
  switch (t) {
  case CU_MEMORYTYPE_HOST:
    return host ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  case CU_MEMORYTYPE_DEVICE:
    return dev_range_ok(dev + start, extent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  case CU_MEMORYTYPE_UNIFIED:
    return unified_ok(dev + start, extent) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  case CU_MEMORYTYPE_ARRAY:
    return arr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult copy2d_check(const CUDA_MEMCPY2D *p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (p->WidthInBytes == 0 || p->Height == 0) return CUDA_SUCCESS;
  size_t sp = p->srcPitch ? p->srcPitch : p->WidthInBytes;
  size_t dp = p->dstPitch ? p->dstPitch : p->WidthInBytes;
  if (p->Height > 1 && (sp < p->WidthInBytes || dp < p->WidthInBytes))
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = side_check(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray,
                           p->srcY * sp + p->srcXInBytes,
                           (p->Height - 1) * sp + p->WidthInBytes);
  if (rc != CUDA_SUCCESS) return rc;
  return side_check(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray,
                    p->dstY * dp + p->dstXInBytes,
                    (p->Height - 1) * dp + p->WidthInBytes);
}

static CUresult copy3d_check(const CUDA_MEMCPY3D *p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (p->WidthInBytes == 0 || p->Height == 0 || p->Depth == 0) return CUDA_SUCCESS;
  size_t sp = p->srcPitch ? p->srcPitch : p->WidthInBytes;
  size_t dp = p->dstPitch ? p->dstPitch : p->WidthInBytes;
  size_t sh = p->srcHeight ? p->srcHeight : p->Height;
  size_t dh = p->dstHeight ? p->dstHeight : p->Height;
  if (sp < p->WidthInBytes || dp < p->WidthInBytes || sh < p->Height || dh < p->Height)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = side_check(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray,
                           (p->srcZ * sh + p->srcY) * sp + p->srcXInBytes,
                           ((p->Depth - 1) * sh + (p->Height - 1)) * sp + p->WidthInBytes);
  if (rc != CUDA_SUCCESS) return rc;
  return side_check(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray,
                    (p->dstZ * dh + p->dstY) * dp + p->dstXInBytes,
                    ((p->Depth - 1) * dh + (p->Height - 1)) * dp + p->WidthInBytes);
}

static CUresult sync_sleep(void) {
  unsigned ms = __atomic_load_n(&g_sync_ms, __ATOMIC_RELAXED);
  if (ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Stand-in-only helpers (not CUDA API)                                      */
/* ------------------------------------------------------------------------ */

/* Milliseconds every cuStreamSynchronize/cuCtxSynchronize/cuEventSynchronize
 * sleeps from now on. */
static __attribute__((noinline)) void set_sync_ms(unsigned ms) {
  __atomic_store_n(&g_sync_ms, ms, __ATOMIC_RELAXED);
}

CUAPI void neutracer_standin_set_sync_ms(unsigned ms) {
  set_sync_ms(ms);
}

/* Number of calls made to the named exported CUDA symbol so far. */
CUAPI unsigned long long neutracer_standin_call_count(const char *symbol) {
  if (!symbol) return 0;
  for (int i = 0; i < API__COUNT; i++)
    if (strcmp(g_api_names[i], symbol) == 0)
      return __atomic_load_n(&g_calls[i], __ATOMIC_RELAXED);
  return 0;
}

/* Name of counter i (0-based), or NULL past the end. */
static __attribute__((noinline)) const char *api_name(unsigned i) {
  return i < API__COUNT ? g_api_names[i] : NULL;
}

CUAPI const char *neutracer_standin_api_name(unsigned i) {
  return api_name(i);
}

/* ------------------------------------------------------------------------ */
/* Init / version                                                            */
/* ------------------------------------------------------------------------ */

CUAPI CUresult cuInit(unsigned int Flags) {
  COUNT_CALL(cuInit);
  return Flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUAPI CUresult cuDriverGetVersion(int *driverVersion) {
  COUNT_CALL(cuDriverGetVersion);
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = 12080;
  return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Launches                                                                  */
/* ------------------------------------------------------------------------ */

CUAPI CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                              unsigned int gridDimZ, unsigned int blockDimX,
                              unsigned int blockDimY, unsigned int blockDimZ,
                              unsigned int sharedMemBytes, CUstream hStream,
                              void **kernelParams, void **extra) {
  COUNT_CALL(cuLaunchKernel);
  (void)sharedMemBytes; (void)hStream; (void)kernelParams; (void)extra;
  return launch_check(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ);
}

CUAPI CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX,
                                   unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream,
                                   void **kernelParams, void **extra) {
  COUNT_CALL(cuLaunchKernel_ptsz);
  (void)sharedMemBytes; (void)hStream; (void)kernelParams; (void)extra;
  return launch_check(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ);
}

CUAPI CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                void **kernelParams, void **extra) {
  COUNT_CALL(cuLaunchKernelEx);
  (void)kernelParams; (void)extra;
  return launch_ex_check(config, f);
}

CUAPI CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                     void **kernelParams, void **extra) {
  COUNT_CALL(cuLaunchKernelEx_ptsz);
  (void)kernelParams; (void)extra;
  return launch_ex_check(config, f);
}

CUAPI CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                         unsigned int gridDimY, unsigned int gridDimZ,
                                         unsigned int blockDimX, unsigned int blockDimY,
                                         unsigned int blockDimZ, unsigned int sharedMemBytes,
                                         CUstream hStream, void **kernelParams) {
  COUNT_CALL(cuLaunchCooperativeKernel);
  (void)sharedMemBytes; (void)hStream; (void)kernelParams;
  return launch_check(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ);
}

CUAPI CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                              unsigned int gridDimY, unsigned int gridDimZ,
                                              unsigned int blockDimX, unsigned int blockDimY,
                                              unsigned int blockDimZ,
                                              unsigned int sharedMemBytes, CUstream hStream,
                                              void **kernelParams) {
  COUNT_CALL(cuLaunchCooperativeKernel_ptsz);
  (void)sharedMemBytes; (void)hStream; (void)kernelParams;
  return launch_check(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ);
}

CUAPI CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  COUNT_CALL(cuGraphLaunch);
  (void)hStream;
  return hGraphExec ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUAPI CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  COUNT_CALL(cuGraphLaunch_ptsz);
  (void)hStream;
  return hGraphExec ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ------------------------------------------------------------------------ */
/* Modules, libraries, names                                                 */
/* ------------------------------------------------------------------------ */

CUAPI CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  COUNT_CALL(cuModuleLoadData);
  return new_container((void **)module, image, TOK_MODULE);
}

CUAPI CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  COUNT_CALL(cuModuleGetFunction);
  return get_child((void **)hfunc, hmod, TOK_MODULE, TOK_FUNCTION, name);
}

CUAPI CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
                                 CUjit_option *jitOptions, void **jitOptionsValues,
                                 unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                 void **libraryOptionValues, unsigned int numLibraryOptions) {
  COUNT_CALL(cuLibraryLoadData);
  if ((numJitOptions && (!jitOptions || !jitOptionsValues)) ||
      (numLibraryOptions && (!libraryOptions || !libraryOptionValues)))
    return CUDA_ERROR_INVALID_VALUE;
  return new_container((void **)library, code, TOK_LIBRARY);
}

CUAPI CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
  COUNT_CALL(cuLibraryGetKernel);
  return get_child((void **)pKernel, library, TOK_LIBRARY, TOK_KERNEL, name);
}

CUAPI CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
  COUNT_CALL(cuKernelGetFunction);
  return kernel_get_function(pFunc, kernel);
}

/* ------------------------------------------------------------------------ */
/* Allocation                                                                */
/* ------------------------------------------------------------------------ */

CUAPI CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) {
  COUNT_CALL(cuMemAlloc_v2);
  return sim_alloc(bytesize, KIND_DEVICE, dptr);
}

CUAPI CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                  size_t Height, unsigned int ElementSizeBytes) {
  COUNT_CALL(cuMemAllocPitch_v2);
  if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0) return CUDA_ERROR_INVALID_VALUE;
  if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned long long pitch = round_up(WidthInBytes, SIM_ALIGN);
  if (Height > ~0ULL / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
  CUdeviceptr p;
  CUresult rc = sim_alloc(pitch * Height, KIND_PITCH, &p);
  if (rc == CUDA_SUCCESS) {
    *dptr = p;
    *pPitch = pitch;
  }
  return rc;
}

CUAPI CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  COUNT_CALL(cuMemAllocAsync);
  (void)hStream;
  return sim_alloc(bytesize, KIND_ASYNC, dptr);
}

CUAPI CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) {
  COUNT_CALL(cuMemAllocAsync_ptsz);
  (void)hStream;
  return sim_alloc(bytesize, KIND_ASYNC, dptr);
}

CUAPI CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                       CUstream hStream) {
  COUNT_CALL(cuMemAllocFromPoolAsync);
  (void)hStream;
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  return sim_alloc(bytesize, KIND_POOL, dptr);
}

CUAPI CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                            CUmemoryPool pool, CUstream hStream) {
  COUNT_CALL(cuMemAllocFromPoolAsync_ptsz);
  (void)hStream;
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  return sim_alloc(bytesize, KIND_POOL, dptr);
}

CUAPI CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  COUNT_CALL(cuMemAllocManaged);
  /* CU_MEM_ATTACH_GLOBAL = 1, CU_MEM_ATTACH_HOST = 2 */
  if (flags != 1 && flags != 2) return CUDA_ERROR_INVALID_VALUE;
  return sim_alloc(bytesize, KIND_MANAGED, dptr);
}

CUAPI CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags) {
  COUNT_CALL(cuMemHostAlloc);
  (void)Flags;
  return host_alloc(pp, bytesize);
}

CUAPI CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) {
  COUNT_CALL(cuMemAllocHost_v2);
  return host_alloc(pp, bytesize);
}

CUAPI CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                           const void *prop, unsigned long long flags) {
  COUNT_CALL(cuMemCreate);
  if (!prop || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return sim_alloc(size, KIND_VMM, handle);
}

CUAPI CUresult cuMemFree_v2(CUdeviceptr dptr) {
  COUNT_CALL(cuMemFree_v2);
  return sim_free(dptr, DEVPTR_KINDS);
}

CUAPI CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  COUNT_CALL(cuMemFreeAsync);
  (void)hStream;
  return sim_free(dptr, DEVPTR_KINDS);
}

CUAPI CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  COUNT_CALL(cuMemFreeAsync_ptsz);
  (void)hStream;
  return sim_free(dptr, DEVPTR_KINDS);
}

CUAPI CUresult cuMemFreeHost(void *p) {
  COUNT_CALL(cuMemFreeHost);
  return host_free(p);
}

CUAPI CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  COUNT_CALL(cuMemRelease);
  return sim_free(handle, 1u << KIND_VMM);
}

/* ------------------------------------------------------------------------ */
/* Copies (never touch memory)                                               */
/* ------------------------------------------------------------------------ */

#define HOSTP(p) ((unsigned long long)(uintptr_t)(p))

CUAPI CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount) {
  COUNT_CALL(cuMemcpyHtoD_v2);
  return copy_check(1, dstDevice, 0, HOSTP(srcHost), ByteCount);
}

CUAPI CUresult cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  COUNT_CALL(cuMemcpyDtoH_v2);
  return copy_check(0, HOSTP(dstHost), 1, srcDevice, ByteCount);
}

CUAPI CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  COUNT_CALL(cuMemcpyDtoD_v2);
  return copy_check(1, dstDevice, 1, srcDevice, ByteCount);
}

CUAPI CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost,
                                    size_t ByteCount) {
  COUNT_CALL(cuMemcpyHtoD_v2_ptds);
  return copy_check(1, dstDevice, 0, HOSTP(srcHost), ByteCount);
}

CUAPI CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  COUNT_CALL(cuMemcpyDtoH_v2_ptds);
  return copy_check(0, HOSTP(dstHost), 1, srcDevice, ByteCount);
}

CUAPI CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                    size_t ByteCount) {
  COUNT_CALL(cuMemcpyDtoD_v2_ptds);
  return copy_check(1, dstDevice, 1, srcDevice, ByteCount);
}

CUAPI CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost,
                                    size_t ByteCount, CUstream hStream) {
  COUNT_CALL(cuMemcpyHtoDAsync_v2);
  (void)hStream;
  return copy_check(1, dstDevice, 0, HOSTP(srcHost), ByteCount);
}

CUAPI CUresult cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                    CUstream hStream) {
  COUNT_CALL(cuMemcpyDtoHAsync_v2);
  (void)hStream;
  return copy_check(0, HOSTP(dstHost), 1, srcDevice, ByteCount);
}

CUAPI CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                    size_t ByteCount, CUstream hStream) {
  COUNT_CALL(cuMemcpyDtoDAsync_v2);
  (void)hStream;
  return copy_check(1, dstDevice, 1, srcDevice, ByteCount);
}

CUAPI CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
                                         size_t ByteCount, CUstream hStream) {
  COUNT_CALL(cuMemcpyHtoDAsync_v2_ptsz);
  (void)hStream;
  return copy_check(1, dstDevice, 0, HOSTP(srcHost), ByteCount);
}

CUAPI CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice,
                                         size_t ByteCount, CUstream hStream) {
  COUNT_CALL(cuMemcpyDtoHAsync_v2_ptsz);
  (void)hStream;
  return copy_check(0, HOSTP(dstHost), 1, srcDevice, ByteCount);
}

CUAPI CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                         size_t ByteCount, CUstream hStream) {
  COUNT_CALL(cuMemcpyDtoDAsync_v2_ptsz);
  (void)hStream;
  return copy_check(1, dstDevice, 1, srcDevice, ByteCount);
}

CUAPI CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  COUNT_CALL(cuMemcpy);
  return unified_copy_check(dst, src, ByteCount);
}

CUAPI CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  COUNT_CALL(cuMemcpy_ptds);
  return unified_copy_check(dst, src, ByteCount);
}

CUAPI CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                             CUstream hStream) {
  COUNT_CALL(cuMemcpyAsync);
  (void)hStream;
  return unified_copy_check(dst, src, ByteCount);
}

CUAPI CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                  CUstream hStream) {
  COUNT_CALL(cuMemcpyAsync_ptsz);
  (void)hStream;
  return unified_copy_check(dst, src, ByteCount);
}

CUAPI CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                            CUcontext srcContext, size_t ByteCount) {
  COUNT_CALL(cuMemcpyPeer);
  (void)dstContext; (void)srcContext;
  return copy_check(1, dstDevice, 1, srcDevice, ByteCount);
}

CUAPI CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
                                 CUdeviceptr srcDevice, CUcontext srcContext,
                                 size_t ByteCount) {
  COUNT_CALL(cuMemcpyPeer_ptds);
  (void)dstContext; (void)srcContext;
  return copy_check(1, dstDevice, 1, srcDevice, ByteCount);
}

CUAPI CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                 CUdeviceptr srcDevice, CUcontext srcContext,
                                 size_t ByteCount, CUstream hStream) {
  COUNT_CALL(cuMemcpyPeerAsync);
  (void)dstContext; (void)srcContext; (void)hStream;
  return copy_check(1, dstDevice, 1, srcDevice, ByteCount);
}

CUAPI CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                      CUdeviceptr srcDevice, CUcontext srcContext,
                                      size_t ByteCount, CUstream hStream) {
  COUNT_CALL(cuMemcpyPeerAsync_ptsz);
  (void)dstContext; (void)srcContext; (void)hStream;
  return copy_check(1, dstDevice, 1, srcDevice, ByteCount);
}

CUAPI CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy) {
  COUNT_CALL(cuMemcpy2D_v2);
  return copy2d_check(pCopy);
}

CUAPI CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy) {
  COUNT_CALL(cuMemcpy2D_v2_ptds);
  return copy2d_check(pCopy);
}

CUAPI CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy) {
  COUNT_CALL(cuMemcpy2DUnaligned_v2);
  return copy2d_check(pCopy);
}

CUAPI CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy) {
  COUNT_CALL(cuMemcpy2DUnaligned_v2_ptds);
  return copy2d_check(pCopy);
}

CUAPI CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream) {
  COUNT_CALL(cuMemcpy2DAsync_v2);
  (void)hStream;
  return copy2d_check(pCopy);
}

CUAPI CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream) {
  COUNT_CALL(cuMemcpy2DAsync_v2_ptsz);
  (void)hStream;
  return copy2d_check(pCopy);
}

CUAPI CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy) {
  COUNT_CALL(cuMemcpy3D_v2);
  return copy3d_check(pCopy);
}

CUAPI CUresult cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy) {
  COUNT_CALL(cuMemcpy3D_v2_ptds);
  return copy3d_check(pCopy);
}

CUAPI CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream) {
  COUNT_CALL(cuMemcpy3DAsync_v2);
  (void)hStream;
  return copy3d_check(pCopy);
}

CUAPI CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream) {
  COUNT_CALL(cuMemcpy3DAsync_v2_ptsz);
  (void)hStream;
  return copy3d_check(pCopy);
}

/* ------------------------------------------------------------------------ */
/* Synchronisation                                                           */
/* ------------------------------------------------------------------------ */

CUAPI CUresult cuStreamSynchronize(CUstream hStream) {
  COUNT_CALL(cuStreamSynchronize);
  (void)hStream;
  return sync_sleep();
}

CUAPI CUresult cuStreamSynchronize_ptsz(CUstream hStream) {
  COUNT_CALL(cuStreamSynchronize_ptsz);
  (void)hStream;
  return sync_sleep();
}

CUAPI CUresult cuCtxSynchronize(void) {
  COUNT_CALL(cuCtxSynchronize);
  return sync_sleep();
}

CUAPI CUresult cuEventSynchronize(CUevent hEvent) {
  COUNT_CALL(cuEventSynchronize);
  if (!hEvent) return CUDA_ERROR_INVALID_HANDLE;
  return sync_sleep();
}

/* ------------------------------------------------------------------------ */
/* Contexts: 8 devices, one primary context each, 16 created contexts.  The   */
/* per-thread current context is a stack, as in the driver.                  */
/* ------------------------------------------------------------------------ */

#define STANDIN_DEVICES 8
#define STANDIN_CREATED_CONTEXTS 16
#define STANDIN_CONTEXT_STACK 8

static char g_primary_ctx[STANDIN_DEVICES];
static char g_created_ctx[STANDIN_CREATED_CONTEXTS];
static unsigned g_created_count;
static __thread CUcontext g_ctx_stack[STANDIN_CONTEXT_STACK];
static __thread unsigned g_ctx_depth; /* g_ctx_stack[g_ctx_depth - 1] is current */

CUAPI CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  COUNT_CALL(cuDevicePrimaryCtxRetain);
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= STANDIN_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  *pctx = (CUcontext)(void *)&g_primary_ctx[dev];
  return CUDA_SUCCESS;
}

CUAPI CUresult cuCtxSetCurrent(CUcontext ctx) {
  COUNT_CALL(cuCtxSetCurrent);
  if (g_ctx_depth == 0) g_ctx_depth = 1;
  g_ctx_stack[g_ctx_depth - 1] = ctx;
  return CUDA_SUCCESS;
}

CUAPI CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  COUNT_CALL(cuCtxCreate_v2);
  (void)flags;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= STANDIN_DEVICES) return CUDA_ERROR_INVALID_DEVICE;
  unsigned slot = __atomic_fetch_add(&g_created_count, 1, __ATOMIC_RELAXED);
  if (slot >= STANDIN_CREATED_CONTEXTS || g_ctx_depth >= STANDIN_CONTEXT_STACK)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pctx = (CUcontext)(void *)&g_created_ctx[slot];
  g_ctx_stack[g_ctx_depth++] = *pctx;
  return CUDA_SUCCESS;
}

CUAPI CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  COUNT_CALL(cuCtxPushCurrent_v2);
  if (!ctx) return CUDA_ERROR_INVALID_VALUE;
  if (g_ctx_depth >= STANDIN_CONTEXT_STACK) return CUDA_ERROR_OUT_OF_MEMORY;
  g_ctx_stack[g_ctx_depth++] = ctx;
  return CUDA_SUCCESS;
}

CUAPI CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  COUNT_CALL(cuCtxPopCurrent_v2);
  if (g_ctx_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext popped = g_ctx_stack[--g_ctx_depth];
  if (pctx) *pctx = popped;
  return CUDA_SUCCESS;
}
