// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which libcuda symbols neutracerd probes, with which BPF program, and what each API means.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "bpf/neutracer_abi.h"

namespace neutracer {

// The BPF programs a symbol can be attached to (see bpf/*.bpf.c).
enum class ProbeProgram {
  launch_handle_arg1, // entry only, in-kernel count
  launch_handle_arg2, // entry only, in-kernel count
  call,               // call_enter + call_exit
  name,               // call_enter + name_exit
  context_set,        // entry only: the thread's current context
  context_push,       // entry only
  context_pop,        // entry only
};

struct ProbedSymbol {
  std::string_view symbol;
  nt_api api;
  ProbeProgram program;
};

// Every symbol neutracerd tries to attach; symbols an older driver lacks are skipped and counted.
std::span<const ProbedSymbol> probed_symbols();

// The API name used in labels, e.g. "cuMemAlloc_v2" (twins share their base API's name).
std::string_view api_name(nt_api api);

enum class MemoryKind { device, managed, host_pinned, vmm };
std::string_view memory_kind_name(MemoryKind kind);

// Kind of memory an allocation API returns, nullopt for non-allocations.
std::optional<MemoryKind> allocation_kind(nt_api api);
bool is_free_api(nt_api api);
bool is_copy_api(nt_api api);
bool is_sync_api(nt_api api);
bool is_launch_api(nt_api api);
// Calls probed with the launches in adaptive mode (only while a process's window is open).
bool is_sampled_call_api(nt_api api);

// For calls that bind a context to a device (primary-context retain, context creation): the
// CUdevice ordinal among their arguments; nullopt for other APIs.
std::optional<int> context_device(nt_api api, const std::uint64_t (&args)[5]);

// Human name of a CUresult, e.g. 2 -> "CUDA_ERROR_OUT_OF_MEMORY"; unknown codes ->
// "CUDA_ERROR_<n>".
std::string cu_result_name(std::uint32_t result);

} // namespace neutracer
