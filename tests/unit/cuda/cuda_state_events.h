// SPDX-License-Identifier: Apache-2.0
#pragma once
// The events and lookups the CudaState tests build their cases from.
#include <cstdint>
#include <initializer_list>
#include <set>
#include <stdexcept>
#include <string>

#include "call_event.h"
#include "cuda/cuda_state.h"

namespace neutracer::cuda_state_test {

// ticks_per_second = 100, so proc_start_ns = start_ticks * 10'000'000.
inline constexpr std::uint64_t kNsPerTick = 10'000'000;
inline constexpr std::uint32_t kPid = 4242;
inline constexpr std::uint64_t kStartTicks = 5000;
inline const ProcessId kProc{static_cast<int>(kPid), kStartTicks};

inline CudaState::Settings settings(std::uint32_t max_kernels = 50, double window = 10) {
  CudaState::Settings s;
  s.max_kernels_per_process = max_kernels;
  s.throughput_window_seconds = window;
  s.ticks_per_second = 100;
  return s;
}

inline nt_call_event call(nt_api api, std::initializer_list<std::uint64_t> args = {},
                          std::initializer_list<std::uint64_t> out = {}, std::uint32_t result = 0,
                          std::uint32_t tgid = kPid, std::uint64_t start_ticks = kStartTicks) {
  // Anywhere inside the tick maps to the same process.
  auto e = test::call_event(api, tgid, start_ticks * kNsPerTick + 1234, args, out, result);
  e.tid = tgid + 1;
  e.enter_ns = 1'000'000;
  e.exit_ns = 2'000'000;
  return e;
}

// cuMemAlloc-shaped calls: args[0] = out pointer, args[1] = size, out[0] = address.
inline nt_call_event alloc(nt_api api, std::uint64_t address, std::uint64_t size,
                           std::uint32_t result = 0) {
  return call(api, {0x7ffd00001000, size}, {address}, result);
}

inline nt_call_event free_call(nt_api api, std::uint64_t address, std::uint32_t result = 0) {
  return call(api, {address}, {}, result);
}

inline nt_call_event copy(nt_api api, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes,
                          std::uint32_t result = 0) {
  return call(api, {dst, src, bytes}, {}, result);
}

inline nt_call_event copy_nd(nt_api api, std::uint32_t src_type, std::uint32_t dst_type,
                             std::uint64_t bytes) {
  return call(api, {0x7ffd00002000}, {src_type | (std::uint64_t{dst_type} << 32), bytes});
}

inline nt_call_event sync(nt_api api, std::uint64_t enter_ns, std::uint64_t exit_ns,
                          std::uint32_t result = 0) {
  auto e = call(api, {0}, {}, result);
  e.enter_ns = enter_ns;
  e.exit_ns = exit_ns;
  return e;
}

inline NameEvent name_event(nt_api api, std::uint64_t handle, std::string name,
                            std::uint32_t result = 0, std::uint32_t tgid = kPid,
                            std::uint64_t start_ticks = kStartTicks) {
  NameEvent e;
  e.api = api;
  e.tgid = tgid;
  e.proc_start_ns = start_ticks * kNsPerTick;
  e.result = result;
  e.handle = handle;
  e.owner = 0xaaaa;
  e.name = std::move(name);
  return e;
}

inline LaunchCount launch(nt_api api, std::uint64_t handle, std::uint64_t count,
                          std::uint32_t tgid = kPid, std::uint64_t start_ticks = kStartTicks) {
  return {tgid, start_ticks * kNsPerTick, api, handle, count};
}

inline const ProcessState &state_of(const CudaState &state, const ProcessId &id = kProc) {
  const auto it = state.processes().find(id);
  if (it == state.processes().end())
    throw std::runtime_error("no state for pid " + std::to_string(id.pid));
  return it->second;
}

inline const MemoryCounters &mem(const CudaState &state, MemoryKind kind) {
  return state_of(state).memory[static_cast<std::size_t>(kind)];
}

inline std::uint64_t copied(const CudaState &state, CopyDirection direction) {
  return state_of(state).copy_bytes[static_cast<std::size_t>(direction)];
}

inline std::uint64_t copies(const CudaState &state, CopyDirection direction) {
  return state_of(state).copies[static_cast<std::size_t>(direction)];
}

inline std::uint64_t launches_of(const CudaState &state, const std::string &label) {
  const auto &kernels = state_of(state).kernels;
  const auto it = kernels.find(label);
  return it == kernels.end() ? 0 : it->second.launches;
}

inline std::set<std::string> labels(const CudaState &state) {
  std::set<std::string> out;
  for (const auto &[label, series] : state_of(state).kernels)
    out.insert(label);
  return out;
}

} // namespace neutracer::cuda_state_test
