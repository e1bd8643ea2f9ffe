// SPDX-License-Identifier: Apache-2.0
#include "cuda/cuda_api_table.h"

#include <array>
#include <string>

#include "common/enum_names.h"

namespace neutracer {
namespace {

using P = ProbeProgram;

// Driver entry points (docs/architecture.md, "Where neutracerd hooks CUDA"). The runtime resolves
// `_v2` and per-thread default stream (`_ptsz`/`_ptds`) variants through cuGetProcAddress, so each
// is probed separately.
constexpr std::array kSymbols = {
    ProbedSymbol{"cuLaunchKernel", NT_API_LAUNCH_KERNEL, P::launch_handle_arg1},
    ProbedSymbol{"cuLaunchKernel_ptsz", NT_API_LAUNCH_KERNEL, P::launch_handle_arg1},
    ProbedSymbol{"cuLaunchKernelEx", NT_API_LAUNCH_KERNEL_EX, P::launch_handle_arg2},
    ProbedSymbol{"cuLaunchKernelEx_ptsz", NT_API_LAUNCH_KERNEL_EX, P::launch_handle_arg2},
    ProbedSymbol{"cuLaunchCooperativeKernel", NT_API_LAUNCH_COOPERATIVE_KERNEL,
                 P::launch_handle_arg1},
    ProbedSymbol{"cuLaunchCooperativeKernel_ptsz", NT_API_LAUNCH_COOPERATIVE_KERNEL,
                 P::launch_handle_arg1},
    ProbedSymbol{"cuGraphLaunch", NT_API_GRAPH_LAUNCH, P::launch_handle_arg1},
    ProbedSymbol{"cuGraphLaunch_ptsz", NT_API_GRAPH_LAUNCH, P::launch_handle_arg1},

    ProbedSymbol{"cuModuleGetFunction", NT_API_MODULE_GET_FUNCTION, P::name},
    ProbedSymbol{"cuLibraryGetKernel", NT_API_LIBRARY_GET_KERNEL, P::name},
    ProbedSymbol{"cuKernelGetFunction", NT_API_KERNEL_GET_FUNCTION, P::call},

    ProbedSymbol{"cuMemAlloc_v2", NT_API_MEM_ALLOC, P::call},
    ProbedSymbol{"cuMemAllocPitch_v2", NT_API_MEM_ALLOC_PITCH, P::call},
    ProbedSymbol{"cuMemAllocAsync", NT_API_MEM_ALLOC_ASYNC, P::call},
    ProbedSymbol{"cuMemAllocAsync_ptsz", NT_API_MEM_ALLOC_ASYNC, P::call},
    ProbedSymbol{"cuMemAllocFromPoolAsync", NT_API_MEM_ALLOC_FROM_POOL_ASYNC, P::call},
    ProbedSymbol{"cuMemAllocFromPoolAsync_ptsz", NT_API_MEM_ALLOC_FROM_POOL_ASYNC, P::call},
    ProbedSymbol{"cuMemAllocManaged", NT_API_MEM_ALLOC_MANAGED, P::call},
    ProbedSymbol{"cuMemHostAlloc", NT_API_MEM_HOST_ALLOC, P::call},
    ProbedSymbol{"cuMemAllocHost_v2", NT_API_MEM_ALLOC_HOST, P::call},
    ProbedSymbol{"cuMemCreate", NT_API_MEM_CREATE, P::call},
    ProbedSymbol{"cuMemFree_v2", NT_API_MEM_FREE, P::call},
    ProbedSymbol{"cuMemFreeAsync", NT_API_MEM_FREE_ASYNC, P::call},
    ProbedSymbol{"cuMemFreeAsync_ptsz", NT_API_MEM_FREE_ASYNC, P::call},
    ProbedSymbol{"cuMemFreeHost", NT_API_MEM_FREE_HOST, P::call},
    ProbedSymbol{"cuMemRelease", NT_API_MEM_RELEASE, P::call},

    ProbedSymbol{"cuMemcpyHtoD_v2", NT_API_MEMCPY_HTOD, P::call},
    ProbedSymbol{"cuMemcpyHtoD_v2_ptds", NT_API_MEMCPY_HTOD, P::call},
    ProbedSymbol{"cuMemcpyDtoH_v2", NT_API_MEMCPY_DTOH, P::call},
    ProbedSymbol{"cuMemcpyDtoH_v2_ptds", NT_API_MEMCPY_DTOH, P::call},
    ProbedSymbol{"cuMemcpyDtoD_v2", NT_API_MEMCPY_DTOD, P::call},
    ProbedSymbol{"cuMemcpyDtoD_v2_ptds", NT_API_MEMCPY_DTOD, P::call},
    ProbedSymbol{"cuMemcpyHtoDAsync_v2", NT_API_MEMCPY_HTOD_ASYNC, P::call},
    ProbedSymbol{"cuMemcpyHtoDAsync_v2_ptsz", NT_API_MEMCPY_HTOD_ASYNC, P::call},
    ProbedSymbol{"cuMemcpyDtoHAsync_v2", NT_API_MEMCPY_DTOH_ASYNC, P::call},
    ProbedSymbol{"cuMemcpyDtoHAsync_v2_ptsz", NT_API_MEMCPY_DTOH_ASYNC, P::call},
    ProbedSymbol{"cuMemcpyDtoDAsync_v2", NT_API_MEMCPY_DTOD_ASYNC, P::call},
    ProbedSymbol{"cuMemcpyDtoDAsync_v2_ptsz", NT_API_MEMCPY_DTOD_ASYNC, P::call},
    ProbedSymbol{"cuMemcpy", NT_API_MEMCPY, P::call},
    ProbedSymbol{"cuMemcpy_ptds", NT_API_MEMCPY, P::call},
    ProbedSymbol{"cuMemcpyAsync", NT_API_MEMCPY_ASYNC, P::call},
    ProbedSymbol{"cuMemcpyAsync_ptsz", NT_API_MEMCPY_ASYNC, P::call},
    ProbedSymbol{"cuMemcpyPeer", NT_API_MEMCPY_PEER, P::call},
    ProbedSymbol{"cuMemcpyPeer_ptds", NT_API_MEMCPY_PEER, P::call},
    ProbedSymbol{"cuMemcpyPeerAsync", NT_API_MEMCPY_PEER_ASYNC, P::call},
    ProbedSymbol{"cuMemcpyPeerAsync_ptsz", NT_API_MEMCPY_PEER_ASYNC, P::call},
    ProbedSymbol{"cuMemcpy2D_v2", NT_API_MEMCPY_2D, P::call},
    ProbedSymbol{"cuMemcpy2D_v2_ptds", NT_API_MEMCPY_2D, P::call},
    ProbedSymbol{"cuMemcpy2DAsync_v2", NT_API_MEMCPY_2D_ASYNC, P::call},
    ProbedSymbol{"cuMemcpy2DAsync_v2_ptsz", NT_API_MEMCPY_2D_ASYNC, P::call},
    ProbedSymbol{"cuMemcpy2DUnaligned_v2", NT_API_MEMCPY_2D_UNALIGNED, P::call},
    ProbedSymbol{"cuMemcpy2DUnaligned_v2_ptds", NT_API_MEMCPY_2D_UNALIGNED, P::call},
    ProbedSymbol{"cuMemcpy3D_v2", NT_API_MEMCPY_3D, P::call},
    ProbedSymbol{"cuMemcpy3D_v2_ptds", NT_API_MEMCPY_3D, P::call},
    ProbedSymbol{"cuMemcpy3DAsync_v2", NT_API_MEMCPY_3D_ASYNC, P::call},
    ProbedSymbol{"cuMemcpy3DAsync_v2_ptsz", NT_API_MEMCPY_3D_ASYNC, P::call},

    ProbedSymbol{"cuStreamSynchronize", NT_API_STREAM_SYNCHRONIZE, P::call},
    ProbedSymbol{"cuStreamSynchronize_ptsz", NT_API_STREAM_SYNCHRONIZE, P::call},
    ProbedSymbol{"cuCtxSynchronize", NT_API_CTX_SYNCHRONIZE, P::call},
    // CUDA 13 runtimes (PyTorch cu130) synchronize the device through the _v2 entry point.
    ProbedSymbol{"cuCtxSynchronize_v2", NT_API_CTX_SYNCHRONIZE, P::call},
    ProbedSymbol{"cuEventSynchronize", NT_API_EVENT_SYNCHRONIZE, P::call},

    // Which GPU: the thread's current context, joined with context -> device.
    ProbedSymbol{"cuCtxSetCurrent", NT_API_CTX_SET_CURRENT, P::context_set},
    ProbedSymbol{"cuCtxPushCurrent_v2", NT_API_CTX_PUSH_CURRENT, P::context_push},
    ProbedSymbol{"cuCtxPopCurrent_v2", NT_API_CTX_POP_CURRENT, P::context_pop},
    ProbedSymbol{"cuDevicePrimaryCtxRetain", NT_API_PRIMARY_CTX_RETAIN, P::call},
    ProbedSymbol{"cuCtxCreate_v2", NT_API_CTX_CREATE, P::call},
    ProbedSymbol{"cuCtxCreate_v3", NT_API_CTX_CREATE_V3, P::call},
    ProbedSymbol{"cuCtxCreate_v4", NT_API_CTX_CREATE_V4, P::call},
};

} // namespace

std::span<const ProbedSymbol> probed_symbols() { return kSymbols; }

std::string_view api_name(nt_api api) {
  // The first symbol listed for an API is its base name.
  for (const auto &symbol : kSymbols)
    if (symbol.api == api)
      return symbol.symbol;
  return "unknown";
}

constexpr std::array<std::string_view, 4> kMemoryKindNames = {"device", "managed", "host_pinned",
                                                              "vmm"};
static_assert(kMemoryKindNames.size() == enum_count(MemoryKind::vmm));

std::string_view memory_kind_name(MemoryKind kind) { return enum_name(kind, kMemoryKindNames); }

std::optional<MemoryKind> allocation_kind(nt_api api) {
  switch (api) {
  case NT_API_MEM_ALLOC:
  case NT_API_MEM_ALLOC_PITCH:
  case NT_API_MEM_ALLOC_ASYNC:
  case NT_API_MEM_ALLOC_FROM_POOL_ASYNC:
    return MemoryKind::device;
  case NT_API_MEM_ALLOC_MANAGED:
    return MemoryKind::managed;
  case NT_API_MEM_HOST_ALLOC:
  case NT_API_MEM_ALLOC_HOST:
    return MemoryKind::host_pinned;
  case NT_API_MEM_CREATE:
    return MemoryKind::vmm;
  default:
    return std::nullopt;
  }
}

bool is_free_api(nt_api api) { return api >= NT_API_MEM_FREE && api <= NT_API_MEM_RELEASE; }
bool is_copy_api(nt_api api) { return api >= NT_API_MEMCPY_HTOD && api <= NT_API_MEMCPY_3D_ASYNC; }
bool is_sync_api(nt_api api) {
  return api >= NT_API_STREAM_SYNCHRONIZE && api <= NT_API_EVENT_SYNCHRONIZE;
}
bool is_launch_api(nt_api api) { return api >= NT_API_LAUNCH_KERNEL && api <= NT_API_GRAPH_LAUNCH; }

bool is_sampled_call_api(nt_api api) { return api == NT_API_KERNEL_GET_FUNCTION; }

std::optional<int> context_device(nt_api api, const std::uint64_t (&args)[5]) {
  switch (api) {
  case NT_API_PRIMARY_CTX_RETAIN:
    return static_cast<int>(args[1]);
  case NT_API_CTX_CREATE:
    return static_cast<int>(args[2]);
  case NT_API_CTX_CREATE_V3:
    return static_cast<int>(args[4]);
  case NT_API_CTX_CREATE_V4:
    return static_cast<int>(args[3]);
  default:
    return std::nullopt;
  }
}

std::string cu_result_name(std::uint32_t result) {
  // The codes a tracer is likely to see (cuda.h CUresult); the rest keep their number.
  switch (result) {
  case 0:
    return "CUDA_SUCCESS";
  case 1:
    return "CUDA_ERROR_INVALID_VALUE";
  case 2:
    return "CUDA_ERROR_OUT_OF_MEMORY";
  case 3:
    return "CUDA_ERROR_NOT_INITIALIZED";
  case 4:
    return "CUDA_ERROR_DEINITIALIZED";
  case 100:
    return "CUDA_ERROR_NO_DEVICE";
  case 101:
    return "CUDA_ERROR_INVALID_DEVICE";
  case 200:
    return "CUDA_ERROR_INVALID_IMAGE";
  case 201:
    return "CUDA_ERROR_INVALID_CONTEXT";
  case 209:
    return "CUDA_ERROR_NO_BINARY_FOR_GPU";
  case 400:
    return "CUDA_ERROR_INVALID_HANDLE";
  case 500:
    return "CUDA_ERROR_NOT_FOUND";
  case 600:
    return "CUDA_ERROR_NOT_READY";
  case 700:
    return "CUDA_ERROR_ILLEGAL_ADDRESS";
  case 701:
    return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
  case 702:
    return "CUDA_ERROR_LAUNCH_TIMEOUT";
  case 719:
    return "CUDA_ERROR_LAUNCH_FAILED";
  case 999:
    return "CUDA_ERROR_UNKNOWN";
  default:
    return "CUDA_ERROR_" + std::to_string(result);
  }
}

} // namespace neutracer
