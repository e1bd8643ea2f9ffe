// SPDX-License-Identifier: Apache-2.0
#include "cuda/cuda_state.h"

#include <gtest/gtest.h>

#include "call_event.h"

#include <array>
#include <cmath>
#include <initializer_list>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace neutracer {
namespace {

// ticks_per_second = 100, so proc_start_ns = start_ticks * 10'000'000.
constexpr std::uint64_t kNsPerTick = 10'000'000;
constexpr std::uint32_t kPid = 4242;
constexpr std::uint64_t kStartTicks = 5000;
const ProcessId kProc{static_cast<int>(kPid), kStartTicks};

CudaState::Settings settings(std::uint32_t max_kernels = 50, double window = 10) {
  CudaState::Settings s;
  s.max_kernels_per_process = max_kernels;
  s.throughput_window_seconds = window;
  s.ticks_per_second = 100;
  return s;
}

nt_call_event call(nt_api api, std::initializer_list<std::uint64_t> args = {},
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
nt_call_event alloc(nt_api api, std::uint64_t address, std::uint64_t size,
                    std::uint32_t result = 0) {
  return call(api, {0x7ffd00001000, size}, {address}, result);
}

nt_call_event free_call(nt_api api, std::uint64_t address, std::uint32_t result = 0) {
  return call(api, {address}, {}, result);
}

nt_call_event copy(nt_api api, std::uint64_t dst, std::uint64_t src, std::uint64_t bytes,
                   std::uint32_t result = 0) {
  return call(api, {dst, src, bytes}, {}, result);
}

nt_call_event copy_nd(nt_api api, std::uint32_t src_type, std::uint32_t dst_type,
                      std::uint64_t bytes) {
  return call(api, {0x7ffd00002000}, {src_type | (std::uint64_t{dst_type} << 32), bytes});
}

nt_call_event sync(nt_api api, std::uint64_t enter_ns, std::uint64_t exit_ns,
                   std::uint32_t result = 0) {
  auto e = call(api, {0}, {}, result);
  e.enter_ns = enter_ns;
  e.exit_ns = exit_ns;
  return e;
}

NameEvent name_event(nt_api api, std::uint64_t handle, std::string name, std::uint32_t result = 0,
                     std::uint32_t tgid = kPid, std::uint64_t start_ticks = kStartTicks) {
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

LaunchCount launch(nt_api api, std::uint64_t handle, std::uint64_t count, std::uint32_t tgid = kPid,
                   std::uint64_t start_ticks = kStartTicks) {
  return {tgid, start_ticks * kNsPerTick, api, handle, count};
}

const ProcessState &state_of(const CudaState &state, const ProcessId &id = kProc) {
  const auto it = state.processes().find(id);
  if (it == state.processes().end())
    throw std::runtime_error("no state for pid " + std::to_string(id.pid));
  return it->second;
}

const MemoryCounters &mem(const CudaState &state, MemoryKind kind) {
  return state_of(state).memory[static_cast<std::size_t>(kind)];
}

std::uint64_t copied(const CudaState &state, CopyDirection direction) {
  return state_of(state).copy_bytes[static_cast<std::size_t>(direction)];
}

std::uint64_t copies(const CudaState &state, CopyDirection direction) {
  return state_of(state).copies[static_cast<std::size_t>(direction)];
}

std::uint64_t launches_of(const CudaState &state, const std::string &label) {
  const auto &kernels = state_of(state).kernels;
  const auto it = kernels.find(label);
  return it == kernels.end() ? 0 : it->second.launches;
}

std::set<std::string> labels(const CudaState &state) {
  std::set<std::string> out;
  for (const auto &[label, series] : state_of(state).kernels)
    out.insert(label);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Process identity

TEST(CudaState, ProcessIdFromStartNanoseconds) {
  const CudaState state(settings());
  EXPECT_EQ(state.process_id(7, 0), (ProcessId{7, 0}));
  EXPECT_EQ(state.process_id(7, 5 * kNsPerTick), (ProcessId{7, 5}));
  EXPECT_EQ(state.process_id(7, 6 * kNsPerTick - 1), (ProcessId{7, 5}));
  EXPECT_EQ(state.process_id(7, 6 * kNsPerTick), (ProcessId{7, 6}));
  auto s = settings();
  s.ticks_per_second = 1000;
  EXPECT_EQ(CudaState(s).process_id(7, 5'000'000), (ProcessId{7, 5}));
}

TEST(CudaState, PidReuseGivesSeparateProcesses) {
  CudaState state(settings());
  state.apply(alloc(NT_API_MEM_ALLOC, 0x1000, 100));
  auto other = alloc(NT_API_MEM_ALLOC, 0x1000, 300);
  other.proc_start_ns = (kStartTicks + 777) * kNsPerTick;
  state.apply(other);
  ASSERT_EQ(state.processes().size(), 2u);
  const ProcessId reused{static_cast<int>(kPid), kStartTicks + 777};
  EXPECT_EQ(state_of(state, kProc).memory[0].used_bytes, 100u);
  EXPECT_EQ(state_of(state, reused).memory[0].used_bytes, 300u);
  // A free in the new process does not touch the old one's allocation.
  auto free_new = free_call(NT_API_MEM_FREE, 0x1000);
  free_new.proc_start_ns = (kStartTicks + 777) * kNsPerTick;
  state.apply(free_new);
  EXPECT_EQ(state_of(state, kProc).memory[0].used_bytes, 100u);
  EXPECT_EQ(state_of(state, reused).memory[0].used_bytes, 0u);
}

// ---------------------------------------------------------------------------------------------
// Memory accounting

TEST(CudaState, DeviceAllocationsAndFrees) {
  CudaState state(settings());
  state.apply(alloc(NT_API_MEM_ALLOC, 0x1000, 4096));
  state.apply(alloc(NT_API_MEM_ALLOC_ASYNC, 0x10000, 1000));
  state.apply(alloc(NT_API_MEM_ALLOC_FROM_POOL_ASYNC, 0x20000, 24));
  auto d = mem(state, MemoryKind::device);
  EXPECT_EQ(d.used_bytes, 5120u);
  EXPECT_EQ(d.peak_bytes, 5120u);
  EXPECT_EQ(d.allocations, 3u);
  EXPECT_EQ(d.allocated_bytes, 5120u);
  EXPECT_EQ(d.frees, 0u);

  state.apply(free_call(NT_API_MEM_FREE, 0x1000));
  state.apply(free_call(NT_API_MEM_FREE_ASYNC, 0x10000));
  d = mem(state, MemoryKind::device);
  EXPECT_EQ(d.used_bytes, 24u);
  EXPECT_EQ(d.peak_bytes, 5120u);
  EXPECT_EQ(d.frees, 2u);
  EXPECT_EQ(d.freed_bytes, 5096u);
  EXPECT_EQ(state_of(state).unknown_frees, 0u);

  // Peak only moves up.
  state.apply(alloc(NT_API_MEM_ALLOC, 0x30000, 100));
  EXPECT_EQ(mem(state, MemoryKind::device).used_bytes, 124u);
  EXPECT_EQ(mem(state, MemoryKind::device).peak_bytes, 5120u);
  state.apply(alloc(NT_API_MEM_ALLOC, 0x40000, 10000));
  EXPECT_EQ(mem(state, MemoryKind::device).peak_bytes, 10124u);

  // Other kinds untouched.
  EXPECT_EQ(mem(state, MemoryKind::managed).allocations, 0u);
  EXPECT_EQ(mem(state, MemoryKind::host_pinned).allocations, 0u);
  EXPECT_EQ(mem(state, MemoryKind::vmm).allocations, 0u);
}

TEST(CudaState, ManagedHostPinnedAndVmmKinds) {
  CudaState state(settings());
  state.apply(alloc(NT_API_MEM_ALLOC_MANAGED, 0x100000, 1 << 20));
  state.apply(alloc(NT_API_MEM_HOST_ALLOC, 0x55550000, 4096));
  state.apply(alloc(NT_API_MEM_ALLOC_HOST, 0x55560000, 8192));
  // cuMemCreate(handle*, size, prop, flags): out[0] = handle, args[1] = size.
  state.apply(call(NT_API_MEM_CREATE, {0x7ffd00003000, 2 << 20, 0x7ffd00004000, 0}, {0xbeef00}));

  EXPECT_EQ(mem(state, MemoryKind::managed).used_bytes, 1u << 20);
  EXPECT_EQ(mem(state, MemoryKind::host_pinned).used_bytes, 12288u);
  EXPECT_EQ(mem(state, MemoryKind::host_pinned).allocations, 2u);
  EXPECT_EQ(mem(state, MemoryKind::vmm).used_bytes, 2u << 20);
  EXPECT_EQ(mem(state, MemoryKind::device).used_bytes, 0u);
  EXPECT_EQ(state_of(state).live_vmm.count(0xbeef00), 1u);
  EXPECT_EQ(state_of(state).live.count(0xbeef00), 0u);

  state.apply(free_call(NT_API_MEM_FREE, 0x100000));
  state.apply(free_call(NT_API_MEM_FREE_HOST, 0x55550000));
  state.apply(free_call(NT_API_MEM_RELEASE, 0xbeef00));
  EXPECT_EQ(mem(state, MemoryKind::managed).used_bytes, 0u);
  EXPECT_EQ(mem(state, MemoryKind::managed).frees, 1u);
  EXPECT_EQ(mem(state, MemoryKind::host_pinned).used_bytes, 8192u);
  EXPECT_EQ(mem(state, MemoryKind::host_pinned).freed_bytes, 4096u);
  EXPECT_EQ(mem(state, MemoryKind::vmm).used_bytes, 0u);
  EXPECT_EQ(mem(state, MemoryKind::vmm).frees, 1u);
  EXPECT_EQ(mem(state, MemoryKind::vmm).freed_bytes, 2u << 20);
  EXPECT_EQ(mem(state, MemoryKind::vmm).peak_bytes, 2u << 20);
  EXPECT_EQ(state_of(state).unknown_frees, 0u);
}

TEST(CudaState, VmmHandlesAndDevicePointersAreSeparate) {
  CudaState state(settings());
  state.apply(alloc(NT_API_MEM_ALLOC, 0x5000, 100));
  state.apply(call(NT_API_MEM_CREATE, {0, 700, 0, 0}, {0x5000}));
  // cuMemRelease only releases the handle...
  state.apply(free_call(NT_API_MEM_RELEASE, 0x5000));
  EXPECT_EQ(mem(state, MemoryKind::vmm).used_bytes, 0u);
  EXPECT_EQ(mem(state, MemoryKind::device).used_bytes, 100u);
  // ...and a second release of it is unknown.
  state.apply(free_call(NT_API_MEM_RELEASE, 0x5000));
  EXPECT_EQ(state_of(state).unknown_frees, 1u);
  EXPECT_EQ(mem(state, MemoryKind::device).used_bytes, 100u);
  state.apply(free_call(NT_API_MEM_FREE, 0x5000));
  EXPECT_EQ(mem(state, MemoryKind::device).used_bytes, 0u);
}

TEST(CudaState, PitchAllocationSizeIsPitchTimesHeight) {
  CudaState state(settings());
  // cuMemAllocPitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes); out[1] = pitch.
  state.apply(call(NT_API_MEM_ALLOC_PITCH, {0x7ffd00001000, 0x7ffd00001008, 500, 100, 4},
                   {0x7e0000000000, 512}));
  EXPECT_EQ(mem(state, MemoryKind::device).used_bytes, 51200u);
  EXPECT_EQ(mem(state, MemoryKind::device).allocated_bytes, 51200u);
  ASSERT_EQ(state_of(state).live.count(0x7e0000000000), 1u);
  EXPECT_EQ(state_of(state).live.at(0x7e0000000000).size, 51200u);
  state.apply(free_call(NT_API_MEM_FREE, 0x7e0000000000));
  EXPECT_EQ(mem(state, MemoryKind::device).used_bytes, 0u);
  EXPECT_EQ(mem(state, MemoryKind::device).freed_bytes, 51200u);
}

TEST(CudaState, UnknownFreesNeverGoNegative) {
  CudaState state(settings());
  state.apply(alloc(NT_API_MEM_ALLOC, 0x1000, 100));
  state.apply(free_call(NT_API_MEM_FREE, 0xdead0000));
  state.apply(free_call(NT_API_MEM_FREE_ASYNC, 0xdead1000));
  state.apply(free_call(NT_API_MEM_FREE_HOST, 0xdead2000));
  state.apply(free_call(NT_API_MEM_RELEASE, 0xdead3000));
  // An interior address is not the start of an allocation.
  state.apply(free_call(NT_API_MEM_FREE, 0x1010));
  EXPECT_EQ(state_of(state).unknown_frees, 5u);
  EXPECT_EQ(mem(state, MemoryKind::device).used_bytes, 100u);
  EXPECT_EQ(mem(state, MemoryKind::device).frees, 0u);
  EXPECT_EQ(mem(state, MemoryKind::device).freed_bytes, 0u);

  state.apply(free_call(NT_API_MEM_FREE, 0x1000));
  state.apply(free_call(NT_API_MEM_FREE, 0x1000)); // double free
  EXPECT_EQ(mem(state, MemoryKind::device).used_bytes, 0u);
  EXPECT_EQ(mem(state, MemoryKind::device).frees, 1u);
  EXPECT_EQ(state_of(state).unknown_frees, 6u);
  for (const auto &m : state_of(state).memory)
    EXPECT_EQ(m.used_bytes, 0u);
}

TEST(CudaState, FreeOfNullIsANoOp) {
  CudaState state(settings());
  state.apply(free_call(NT_API_MEM_FREE, 0));
  state.apply(free_call(NT_API_MEM_FREE_HOST, 0));
  EXPECT_EQ(state_of(state).unknown_frees, 0u);
  EXPECT_TRUE(state_of(state).errors.empty());
}

TEST(CudaState, ReusedAddressRetiresTheMissedAllocation) {
  CudaState state(settings());
  state.apply(alloc(NT_API_MEM_ALLOC, 0x1000, 100));
  state.apply(alloc(NT_API_MEM_ALLOC, 0x1000, 200));
  EXPECT_EQ(mem(state, MemoryKind::device).used_bytes, 200u);
  EXPECT_EQ(mem(state, MemoryKind::device).allocations, 2u);
  EXPECT_EQ(mem(state, MemoryKind::device).peak_bytes, 200u);
  // Across kinds: a host allocation at an address we had as device memory.
  state.apply(alloc(NT_API_MEM_ALLOC_HOST, 0x1000, 50));
  EXPECT_EQ(mem(state, MemoryKind::device).used_bytes, 0u);
  EXPECT_EQ(mem(state, MemoryKind::host_pinned).used_bytes, 50u);
  state.apply(free_call(NT_API_MEM_FREE_HOST, 0x1000));
  EXPECT_EQ(mem(state, MemoryKind::host_pinned).used_bytes, 0u);
  EXPECT_EQ(mem(state, MemoryKind::host_pinned).freed_bytes, 50u);
}

TEST(CudaState, FailedCallsAreCountedAndChangeNothing) {
  CudaState state(settings());
  state.apply(alloc(NT_API_MEM_ALLOC, 0x1000, 1 << 30, 2)); // OUT_OF_MEMORY
  state.apply(alloc(NT_API_MEM_ALLOC, 0x2000, 1 << 30, 2));
  state.apply(call(NT_API_MEM_CREATE, {0, 4096, 0, 0}, {0x77}, 1));
  EXPECT_EQ(state_of(state).errors.at({NT_API_MEM_ALLOC, 2}), 2u);
  EXPECT_EQ(state_of(state).errors.at({NT_API_MEM_CREATE, 1}), 1u);
  for (const auto &m : state_of(state).memory) {
    EXPECT_EQ(m.used_bytes, 0u);
    EXPECT_EQ(m.allocations, 0u);
    EXPECT_EQ(m.peak_bytes, 0u);
  }
  EXPECT_TRUE(state_of(state).live.empty());
  EXPECT_TRUE(state_of(state).live_vmm.empty());

  // A failed free leaves the allocation live and is not an unknown free.
  state.apply(alloc(NT_API_MEM_ALLOC, 0x3000, 64));
  state.apply(free_call(NT_API_MEM_FREE, 0x3000, 1));
  EXPECT_EQ(mem(state, MemoryKind::device).used_bytes, 64u);
  EXPECT_EQ(mem(state, MemoryKind::device).frees, 0u);
  EXPECT_EQ(state_of(state).unknown_frees, 0u);
  EXPECT_EQ(state_of(state).errors.at({NT_API_MEM_FREE, 1}), 1u);

  // A failed copy moves no bytes.
  state.apply(copy(NT_API_MEMCPY_HTOD, 0x3000, 0x9000, 64, 1));
  for (std::size_t i = 0; i < kCopyDirections; ++i) {
    EXPECT_EQ(state_of(state).copy_bytes[i], 0u);
    EXPECT_EQ(state_of(state).copies[i], 0u);
  }
  EXPECT_EQ(state_of(state).errors.at({NT_API_MEMCPY_HTOD, 1}), 1u);

  // A failed cuKernelGetFunction links nothing.
  state.apply(call(NT_API_KERNEL_GET_FUNCTION, {0, 0x10}, {0x20}, 400));
  EXPECT_EQ(state_of(state).kernel_names.links(), 0u);
  EXPECT_EQ(state_of(state).errors.size(), 5u);
}

// ---------------------------------------------------------------------------------------------
// Copies

TEST(CudaState, ExplicitDirectionCopies) {
  CudaState state(settings());
  state.apply(copy(NT_API_MEMCPY_HTOD, 1, 2, 100));
  state.apply(copy(NT_API_MEMCPY_HTOD_ASYNC, 1, 2, 1));
  state.apply(copy(NT_API_MEMCPY_DTOH, 1, 2, 200));
  state.apply(copy(NT_API_MEMCPY_DTOH_ASYNC, 1, 2, 2));
  state.apply(copy(NT_API_MEMCPY_DTOD, 1, 2, 300));
  state.apply(copy(NT_API_MEMCPY_DTOD_ASYNC, 1, 2, 3));
  EXPECT_EQ(copied(state, CopyDirection::h2d), 101u);
  EXPECT_EQ(copied(state, CopyDirection::d2h), 202u);
  EXPECT_EQ(copied(state, CopyDirection::d2d), 303u);
  EXPECT_EQ(copies(state, CopyDirection::h2d), 2u);
  EXPECT_EQ(copies(state, CopyDirection::d2h), 2u);
  EXPECT_EQ(copies(state, CopyDirection::d2d), 2u);
  EXPECT_EQ(copies(state, CopyDirection::peer), 0u);
  EXPECT_EQ(copies(state, CopyDirection::default_), 0u);
}

TEST(CudaState, PeerCopiesUseFifthArgument) {
  CudaState state(settings());
  // cuMemcpyPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount).
  state.apply(call(NT_API_MEMCPY_PEER, {0x1000, 0xc1, 0x2000, 0xc2, 4096}));
  state.apply(call(NT_API_MEMCPY_PEER_ASYNC, {0x1000, 0xc1, 0x2000, 0xc2, 8192}));
  EXPECT_EQ(copied(state, CopyDirection::peer), 12288u);
  EXPECT_EQ(copies(state, CopyDirection::peer), 2u);
  EXPECT_EQ(copied(state, CopyDirection::default_), 0u);
}

TEST(CudaState, UnifiedCopiesClassifiedByKnownAllocations) {
  CudaState state(settings());
  state.apply(alloc(NT_API_MEM_ALLOC, 0xd0000, 0x1000));        // device A
  state.apply(alloc(NT_API_MEM_ALLOC, 0xe0000, 0x1000));        // device B
  state.apply(alloc(NT_API_MEM_ALLOC_HOST, 0x70000, 0x1000));   // pinned host
  state.apply(alloc(NT_API_MEM_ALLOC_MANAGED, 0xf0000, 0x100)); // managed counts as device

  // cuMemcpy(dst, src, bytes)
  state.apply(copy(NT_API_MEMCPY, 0xe0000, 0xd0000, 10));       // d2d
  state.apply(copy(NT_API_MEMCPY_ASYNC, 0xe0800, 0xd0010, 20)); // interior, d2d
  state.apply(copy(NT_API_MEMCPY, 0xd0000, 0x70000, 30));       // pinned -> device: h2d
  state.apply(copy(NT_API_MEMCPY_ASYNC, 0x70100, 0xe0000, 40)); // device -> pinned: d2h
  state.apply(copy(NT_API_MEMCPY, 0x123456, 0xd0000, 50));      // unknown dst: default
  state.apply(copy(NT_API_MEMCPY, 0xd0000, 0x123456, 60));      // unknown src: default
  state.apply(copy(NT_API_MEMCPY, 0x70000, 0x70800, 70));       // host -> host: default
  state.apply(copy(NT_API_MEMCPY, 0xd1000, 0xd0000, 80));       // one past the end: default
  state.apply(copy(NT_API_MEMCPY_ASYNC, 0xf0000, 0x70000, 90)); // pinned -> managed: h2d

  EXPECT_EQ(copied(state, CopyDirection::d2d), 30u);
  EXPECT_EQ(copies(state, CopyDirection::d2d), 2u);
  EXPECT_EQ(copied(state, CopyDirection::h2d), 120u);
  EXPECT_EQ(copies(state, CopyDirection::h2d), 2u);
  EXPECT_EQ(copied(state, CopyDirection::d2h), 40u);
  EXPECT_EQ(copied(state, CopyDirection::default_), 260u);
  EXPECT_EQ(copies(state, CopyDirection::default_), 4u);

  // After the free, the same copy is no longer classifiable.
  state.apply(free_call(NT_API_MEM_FREE, 0xe0000));
  state.apply(copy(NT_API_MEMCPY, 0xe0000, 0xd0000, 5));
  EXPECT_EQ(copied(state, CopyDirection::d2d), 30u);
  EXPECT_EQ(copied(state, CopyDirection::default_), 265u);
}

TEST(CudaState, VmmHandlesDoNotClassifyCopies) {
  CudaState state(settings());
  state.apply(call(NT_API_MEM_CREATE, {0, 0x1000, 0, 0}, {0xa0000}));
  state.apply(alloc(NT_API_MEM_ALLOC, 0xb0000, 0x1000));
  state.apply(copy(NT_API_MEMCPY, 0xb0000, 0xa0000, 7));
  EXPECT_EQ(copied(state, CopyDirection::default_), 7u);
  EXPECT_EQ(copied(state, CopyDirection::d2d), 0u);
}

TEST(CudaState, TwoAndThreeDimensionalCopies) {
  CudaState state(settings());
  // CUmemorytype: 1 host, 2 device, 3 array, 4 unified.
  state.apply(copy_nd(NT_API_MEMCPY_2D, 1, 2, 1000));           // h2d
  state.apply(copy_nd(NT_API_MEMCPY_2D_ASYNC, 2, 1, 2000));     // d2h
  state.apply(copy_nd(NT_API_MEMCPY_2D_UNALIGNED, 2, 3, 3000)); // device -> array: d2d
  state.apply(copy_nd(NT_API_MEMCPY_3D, 3, 1, 4000));           // array -> host: d2h
  state.apply(copy_nd(NT_API_MEMCPY_3D_ASYNC, 1, 3, 5000));     // host -> array: h2d
  state.apply(copy_nd(NT_API_MEMCPY_3D, 4, 2, 6000));           // unified: default
  state.apply(copy_nd(NT_API_MEMCPY_2D, 1, 1, 7000));           // host -> host: default
  state.apply(copy_nd(NT_API_MEMCPY_2D, 0, 0, 8000));           // garbage: default
  EXPECT_EQ(copied(state, CopyDirection::h2d), 6000u);
  EXPECT_EQ(copied(state, CopyDirection::d2h), 6000u);
  EXPECT_EQ(copied(state, CopyDirection::d2d), 3000u);
  EXPECT_EQ(copied(state, CopyDirection::default_), 21000u);
  EXPECT_EQ(copies(state, CopyDirection::h2d), 2u);
  EXPECT_EQ(copies(state, CopyDirection::d2h), 2u);
  EXPECT_EQ(copies(state, CopyDirection::d2d), 1u);
  EXPECT_EQ(copies(state, CopyDirection::default_), 3u);
  EXPECT_EQ(copies(state, CopyDirection::peer), 0u);
}

TEST(CudaState, CopyDirectionNames) {
  EXPECT_EQ(copy_direction_name(CopyDirection::h2d), "h2d");
  EXPECT_EQ(copy_direction_name(CopyDirection::d2h), "d2h");
  EXPECT_EQ(copy_direction_name(CopyDirection::d2d), "d2d");
  EXPECT_EQ(copy_direction_name(CopyDirection::peer), "peer");
  EXPECT_EQ(copy_direction_name(CopyDirection::default_), "default");
}

// ---------------------------------------------------------------------------------------------
// Synchronisation

std::size_t expected_bucket(double seconds) {
  for (std::size_t i = 0; i < kSyncWaitBuckets.size(); ++i)
    if (seconds <= kSyncWaitBuckets[i])
      return i;
  return kSyncWaitBuckets.size();
}

TEST(CudaState, SyncWaitsAndHistogram) {
  CudaState state(settings());
  const std::uint64_t t0 = 50'000'000'000ull;
  state.apply(sync(NT_API_STREAM_SYNCHRONIZE, t0, t0 + 1'500'000'000));  // 1.5 s
  state.apply(sync(NT_API_STREAM_SYNCHRONIZE, t0, t0 + 1'000'000));      // exactly 1 ms
  state.apply(sync(NT_API_STREAM_SYNCHRONIZE, t0, t0 + 7'000));          // 7 us
  state.apply(sync(NT_API_STREAM_SYNCHRONIZE, t0, t0 + 61'000'000'000)); // above the last bound
  state.apply(sync(NT_API_CTX_SYNCHRONIZE, t0, t0 + 200'000'000));       // 0.2 s
  state.apply(sync(NT_API_EVENT_SYNCHRONIZE, t0 + 5, t0));               // clock went back: 0

  const auto &syncs = state_of(state).syncs;
  ASSERT_EQ(syncs.size(), 3u);
  const auto &stream = syncs.at(NT_API_STREAM_SYNCHRONIZE);
  EXPECT_EQ(stream.waits, 4u);
  EXPECT_NEAR(stream.wait_seconds, 1.5 + 0.001 + 7e-6 + 61, 1e-9);
  std::array<std::uint64_t, kSyncWaitBuckets.size()> expected{};
  for (const double s : {1.5, 0.001, 7e-6})
    ++expected[expected_bucket(s)];
  EXPECT_EQ(stream.buckets, expected);
  EXPECT_EQ(stream.buckets[11], 1u); // (1, 5]
  EXPECT_EQ(stream.buckets[4], 1u);  // (5e-4, 1e-3]: the bound itself is included
  EXPECT_EQ(stream.buckets[0], 1u);  // <= 1e-5
  std::uint64_t in_buckets = 0;
  for (const auto b : stream.buckets)
    in_buckets += b;
  EXPECT_EQ(in_buckets, 3u); // the 61 s wait is only in the count

  const auto &ctx = syncs.at(NT_API_CTX_SYNCHRONIZE);
  EXPECT_EQ(ctx.waits, 1u);
  EXPECT_NEAR(ctx.wait_seconds, 0.2, 1e-12);
  EXPECT_EQ(ctx.buckets[9], 1u); // (0.1, 0.5]

  const auto &event = syncs.at(NT_API_EVENT_SYNCHRONIZE);
  EXPECT_EQ(event.waits, 1u);
  EXPECT_EQ(event.wait_seconds, 0.0);
  EXPECT_EQ(event.buckets[0], 1u);
}

TEST(CudaState, EveryBucketBoundLandsInItsOwnBucket) {
  CudaState state(settings());
  for (std::size_t i = 0; i < kSyncWaitBuckets.size(); ++i) {
    const auto ns = static_cast<std::uint64_t>(std::llround(kSyncWaitBuckets[i] * 1e9));
    state.apply(sync(NT_API_CTX_SYNCHRONIZE, 1000, 1000 + ns));
    // Just above the bound goes to the next bucket (or only the count).
    state.apply(sync(NT_API_EVENT_SYNCHRONIZE, 1000, 1000 + ns + 1000));
  }
  const auto &at = state_of(state).syncs.at(NT_API_CTX_SYNCHRONIZE);
  const auto &above = state_of(state).syncs.at(NT_API_EVENT_SYNCHRONIZE);
  for (std::size_t i = 0; i < kSyncWaitBuckets.size(); ++i) {
    EXPECT_EQ(at.buckets[i], 1u) << "bound " << kSyncWaitBuckets[i];
    EXPECT_EQ(above.buckets[i], i == 0 ? 0u : 1u) << "bound " << kSyncWaitBuckets[i];
  }
  EXPECT_EQ(above.waits, kSyncWaitBuckets.size());
}

TEST(CudaState, FailedSyncStillWaited) {
  CudaState state(settings());
  state.apply(sync(NT_API_EVENT_SYNCHRONIZE, 0, 2'000'000, 400));
  const auto &event = state_of(state).syncs.at(NT_API_EVENT_SYNCHRONIZE);
  EXPECT_EQ(event.waits, 1u);
  EXPECT_NEAR(event.wait_seconds, 0.002, 1e-12);
  EXPECT_EQ(state_of(state).errors.at({NT_API_EVENT_SYNCHRONIZE, 400}), 1u);
}

TEST(CudaState, InProgressSyncAge) {
  CudaState state(settings());
  const std::uint64_t now = 10'000'000'000ull;
  InflightCall a{kPid, kPid + 1, kStartTicks * kNsPerTick, NT_API_STREAM_SYNCHRONIZE,
                 now - 2'500'000'000};
  InflightCall b{kPid, kPid + 2, kStartTicks * kNsPerTick, NT_API_STREAM_SYNCHRONIZE,
                 now - 500'000'000};
  InflightCall c{kPid, kPid + 3, kStartTicks * kNsPerTick, NT_API_CTX_SYNCHRONIZE,
                 now - 100'000'000};
  InflightCall not_sync{kPid, kPid + 4, kStartTicks * kNsPerTick, NT_API_MEM_ALLOC, 0};
  InflightCall future{kPid, kPid + 5, kStartTicks * kNsPerTick, NT_API_EVENT_SYNCHRONIZE,
                      now + 1000};
  state.set_inflight_calls({a, b, c, not_sync, future}, now);
  const auto &syncs = state_of(state).syncs;
  EXPECT_NEAR(syncs.at(NT_API_STREAM_SYNCHRONIZE).in_progress_seconds, 2.5, 1e-9);
  EXPECT_NEAR(syncs.at(NT_API_CTX_SYNCHRONIZE).in_progress_seconds, 0.1, 1e-9);
  EXPECT_EQ(syncs.at(NT_API_EVENT_SYNCHRONIZE).in_progress_seconds, 0.0);
  // In-progress calls are not completed waits.
  EXPECT_EQ(syncs.at(NT_API_STREAM_SYNCHRONIZE).waits, 0u);

  // Later: only c still waits; the stream sync finished.
  state.set_inflight_calls({c}, now + 1'000'000'000);
  EXPECT_EQ(syncs.at(NT_API_STREAM_SYNCHRONIZE).in_progress_seconds, 0.0);
  EXPECT_NEAR(syncs.at(NT_API_CTX_SYNCHRONIZE).in_progress_seconds, 1.1, 1e-9);

  state.set_inflight_calls({}, now + 2'000'000'000);
  for (const auto &[api, counters] : syncs)
    EXPECT_EQ(counters.in_progress_seconds, 0.0) << api_name(api);
}

TEST(CudaState, NonSyncInflightCallsCountAsLongestCallButNotAsSyncWaits) {
  CudaState state(settings());
  state.set_inflight_calls(
      {{kPid, kPid, kStartTicks * kNsPerTick, NT_API_MEMCPY_DTOH, 0},
       {kPid, kPid + 1, kStartTicks * kNsPerTick, NT_API_MEM_ALLOC, 2'000'000'000}},
      3'000'000'000);
  const auto &process = state.processes().at({kPid, kStartTicks});
  EXPECT_TRUE(process.syncs.empty());
  EXPECT_DOUBLE_EQ(process.longest_call_seconds, 3.0);
  EXPECT_EQ(process.longest_call_api, NT_API_MEMCPY_DTOH);
  // The next read without calls clears it.
  state.set_inflight_calls({}, 4'000'000'000);
  EXPECT_DOUBLE_EQ(state.processes().at({kPid, kStartTicks}).longest_call_seconds, 0.0);
}

// ---------------------------------------------------------------------------------------------
// Kernel naming

constexpr const char *kVectorAdd = "_Z16vectorAdd_kernelPKfS0_Pfi";
constexpr const char *kKernelInt = "_Z6kernelIiEvPT_";
constexpr const char *kKernelFloat = "_Z6kernelIfEvPT_";

TEST(CudaState, KernelNamesJoinedByHandle) {
  CudaState state(settings());
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xf1, kVectorAdd));
  state.apply(name_event(NT_API_LIBRARY_GET_KERNEL, 0xc1, "triton_poi_fused_add_0"));
  // cuKernelGetFunction(&f, kernel): out[0] = CUfunction 0xf2, args[1] = CUkernel 0xc1.
  state.apply(call(NT_API_KERNEL_GET_FUNCTION, {0x7ffd0000, 0xc1}, {0xf2}));
  EXPECT_EQ(state_of(state).kernel_names.kernel_of(0xf2), 0xc1u);

  state.set_launch_counts({
      launch(NT_API_LAUNCH_KERNEL, 0xf1, 10),
      launch(NT_API_LAUNCH_KERNEL_EX, 0xf2, 5),          // via CUfunction -> CUkernel
      launch(NT_API_LAUNCH_KERNEL, 0xc1, 3),             // CUkernel passed directly
      launch(NT_API_LAUNCH_COOPERATIVE_KERNEL, 0xf1, 1), // another API, same kernel
      launch(NT_API_LAUNCH_KERNEL, 0x999, 4),            // never named
      launch(NT_API_LAUNCH_KERNEL_EX, 0x998, 6),         // never named
      launch(NT_API_GRAPH_LAUNCH, 0xf1, 2),              // graphs are never named
  });
  EXPECT_EQ(labels(state), (std::set<std::string>{"vectorAdd_kernel", "triton_poi_fused_add_0",
                                                  kUnresolvedKernel, kGraphLaunch}));
  EXPECT_EQ(launches_of(state, "vectorAdd_kernel"), 11u);
  EXPECT_EQ(launches_of(state, "triton_poi_fused_add_0"), 8u);
  EXPECT_EQ(launches_of(state, kUnresolvedKernel), 10u);
  EXPECT_EQ(launches_of(state, kGraphLaunch), 2u);
  const auto full_names = state_of(state).full_names();
  EXPECT_EQ(full_names.size(), state_of(state).kernels.size()); // one set per series
  EXPECT_EQ(full_names.at("vectorAdd_kernel"),
            (FlatSet<std::string>{"vectorAdd_kernel(float const*, float const*, float*, int)"}));
  EXPECT_EQ(full_names.at("triton_poi_fused_add_0"),
            (FlatSet<std::string>{"triton_poi_fused_add_0"}));
  EXPECT_TRUE(full_names.at(kUnresolvedKernel).empty());
  EXPECT_TRUE(full_names.at(kGraphLaunch).empty());
}

TEST(CudaState, UnnamedLaunchesAreToldPerProcess) {
  CudaState state(settings());
  state.apply(name_event(NT_API_LIBRARY_GET_KERNEL, 0xc1, "triton_poi_fused_add_0"));
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL_EX, 0xf2, 5),
                           launch(NT_API_GRAPH_LAUNCH, 0xe1, 2), // graphs have no name to learn
                           launch(NT_API_LAUNCH_KERNEL, 0xc1, 1, kPid + 1)});
  EXPECT_TRUE(state.has_unnamed_launches(kPid)) << "0xf2 is not linked to its CUkernel yet";
  state.apply(call(NT_API_KERNEL_GET_FUNCTION, {0x7ffd0000, 0xc1}, {0xf2}));
  EXPECT_FALSE(state.has_unnamed_launches(kPid));
  EXPECT_TRUE(state.has_unnamed_launches(kPid + 1)) << "another process, its own names";
  EXPECT_FALSE(state.has_unnamed_launches(kPid + 2)) << "unknown: nothing to learn";
}

TEST(CudaState, SameShortNameIsSummed) {
  CudaState state(settings());
  state.apply(Event{name_event(NT_API_MODULE_GET_FUNCTION, 0xa, kKernelInt)});
  state.apply(Event{name_event(NT_API_MODULE_GET_FUNCTION, 0xb, kKernelFloat)});
  state.set_launch_counts(
      {launch(NT_API_LAUNCH_KERNEL, 0xa, 7), launch(NT_API_LAUNCH_KERNEL, 0xb, 8)});
  EXPECT_EQ(labels(state), (std::set<std::string>{"kernel"}));
  EXPECT_EQ(launches_of(state, "kernel"), 15u);
  EXPECT_EQ(state_of(state).full_names().at("kernel"),
            (FlatSet<std::string>{"void kernel<int>(int*)", "void kernel<float>(float*)"}));
}

TEST(CudaState, NamesArrivingLaterResolveOnNextRead) {
  CudaState state(settings());
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 3)});
  EXPECT_EQ(launches_of(state, kUnresolvedKernel), 3u);
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xa, kVectorAdd));
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 4)});
  EXPECT_EQ(launches_of(state, "vectorAdd_kernel"), 4u);
  EXPECT_EQ(labels(state), (std::set<std::string>{"vectorAdd_kernel"}));
}

TEST(CudaState, BadNameEvents) {
  CudaState state(settings());
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xa, kVectorAdd, 500));
  state.apply(name_event(NT_API_LIBRARY_GET_KERNEL, 0xb, kVectorAdd, 500));
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0, kVectorAdd)); // null handle
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xc, ""));       // unreadable name
  EXPECT_EQ(state_of(state).kernel_names.size(), 0u);
  EXPECT_EQ(state_of(state).errors.at({NT_API_MODULE_GET_FUNCTION, 500}), 1u);
  EXPECT_EQ(state_of(state).errors.at({NT_API_LIBRARY_GET_KERNEL, 500}), 1u);
  state.set_launch_counts(
      {launch(NT_API_LAUNCH_KERNEL, 0xa, 1), launch(NT_API_LAUNCH_KERNEL, 0xc, 1)});
  EXPECT_EQ(labels(state), (std::set<std::string>{kUnresolvedKernel}));
  EXPECT_EQ(launches_of(state, kUnresolvedKernel), 2u);
}

TEST(CudaState, LaunchCountsAreReplacedNotAdded) {
  CudaState state(settings());
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xa, kVectorAdd));
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 5)});
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 5)});
  EXPECT_EQ(launches_of(state, "vectorAdd_kernel"), 5u);
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 9)});
  EXPECT_EQ(launches_of(state, "vectorAdd_kernel"), 9u);
}

TEST(CudaState, LaunchCountsPerProcess) {
  CudaState state(settings());
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xa, kVectorAdd));
  // Same handle value in another process is a different kernel (and unnamed there).
  state.set_launch_counts(
      {launch(NT_API_LAUNCH_KERNEL, 0xa, 5), launch(NT_API_LAUNCH_KERNEL, 0xa, 6, 99, 12)});
  EXPECT_EQ(launches_of(state, "vectorAdd_kernel"), 5u);
  const auto &other = state_of(state, {99, 12}).kernels;
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other.at(kUnresolvedKernel).launches, 6u);
}

// ---------------------------------------------------------------------------------------------
// Top-N cap

TEST(CudaState, TopNCapAndStickyPromotion) {
  CudaState state(settings(/*max_kernels=*/2));
  const std::vector<std::pair<std::uint64_t, std::string>> names = {
      {0xa, "alpha"}, {0xb, "bravo"}, {0xc, "charlie"}, {0xd, "delta"}};
  for (const auto &[handle, name] : names)
    state.apply(name_event(NT_API_MODULE_GET_FUNCTION, handle, name));

  // Round 1: busiest two keep series; pseudo kernels never take a slot.
  state.set_launch_counts(
      {launch(NT_API_LAUNCH_KERNEL, 0xa, 100), launch(NT_API_LAUNCH_KERNEL, 0xb, 50),
       launch(NT_API_LAUNCH_KERNEL, 0xc, 10), launch(NT_API_LAUNCH_KERNEL, 0x999, 1000),
       launch(NT_API_GRAPH_LAUNCH, 0x777, 2000)});
  EXPECT_EQ(labels(state), (std::set<std::string>{"alpha", "bravo", kOtherKernels,
                                                  kUnresolvedKernel, kGraphLaunch}));
  EXPECT_EQ(launches_of(state, kOtherKernels), 10u);
  EXPECT_EQ(state_of(state).full_names().at(kOtherKernels), (FlatSet<std::string>{"charlie"}));
  EXPECT_EQ(state_of(state).promoted, (FlatSet<std::string>{"alpha", "bravo"}));

  // Round 2: charlie overtakes everything, delta appears; alpha and bravo stay promoted.
  state.set_launch_counts(
      {launch(NT_API_LAUNCH_KERNEL, 0xa, 101), launch(NT_API_LAUNCH_KERNEL, 0xb, 51),
       launch(NT_API_LAUNCH_KERNEL, 0xc, 5000), launch(NT_API_LAUNCH_KERNEL, 0xd, 20),
       launch(NT_API_LAUNCH_KERNEL, 0x999, 1000), launch(NT_API_GRAPH_LAUNCH, 0x777, 2000)});
  EXPECT_EQ(launches_of(state, "alpha"), 101u);
  EXPECT_EQ(launches_of(state, "bravo"), 51u);
  EXPECT_EQ(launches_of(state, "charlie"), 0u);
  EXPECT_EQ(launches_of(state, kOtherKernels), 5020u);
  EXPECT_EQ(state_of(state).full_names().at(kOtherKernels),
            (FlatSet<std::string>{"charlie", "delta"}));
  EXPECT_EQ(state_of(state).promoted, (FlatSet<std::string>{"alpha", "bravo"}));
}

TEST(CudaState, TopNTieBreakIsByName) {
  CudaState state(settings(/*max_kernels=*/1));
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xa, "zulu"));
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xb, "echo"));
  state.set_launch_counts(
      {launch(NT_API_LAUNCH_KERNEL, 0xa, 5), launch(NT_API_LAUNCH_KERNEL, 0xb, 5)});
  EXPECT_EQ(labels(state), (std::set<std::string>{"echo", kOtherKernels}));
}

TEST(CudaState, FreeSlotsFilledLater) {
  CudaState state(settings(/*max_kernels=*/2));
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xa, "alpha"));
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xb, "bravo"));
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xc, "charlie"));
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 1)});
  EXPECT_EQ(labels(state), (std::set<std::string>{"alpha"}));
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 1),
                           launch(NT_API_LAUNCH_KERNEL, 0xb, 1),
                           launch(NT_API_LAUNCH_KERNEL, 0xc, 9)});
  EXPECT_EQ(labels(state), (std::set<std::string>{"alpha", "charlie", kOtherKernels}));
  EXPECT_EQ(launches_of(state, kOtherKernels), 1u);
}

TEST(CudaState, OtherAndPromotedCountersNeverDecrease) {
  CudaState state(settings(/*max_kernels=*/2));
  constexpr int kKernels = 8;
  for (int k = 0; k < kKernels; ++k)
    state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0x100 + k, "k" + std::to_string(k)));
  std::vector<std::uint64_t> counts(kKernels, 0);
  std::map<std::string, std::uint64_t> last;
  std::uint32_t seed = 12345;
  for (int round = 0; round < 60; ++round) {
    // Growing counts, with a different kernel surging every few rounds; some appear late.
    for (int k = 0; k < kKernels; ++k) {
      seed = seed * 1103515245u + 12345u;
      if (round >= k * 3)
        counts[k] += (seed >> 16) % 50 + ((round / 5) % kKernels == k ? 1000 : 0);
    }
    std::vector<LaunchCount> read;
    for (int k = 0; k < kKernels; ++k)
      if (counts[k] > 0)
        read.push_back(launch(NT_API_LAUNCH_KERNEL, 0x100 + k, counts[k]));
    state.set_launch_counts(read);
    const auto &kernels = state_of(state).kernels;
    EXPECT_LE(kernels.size(), 3u) << "round " << round; // two kernels + [other]
    std::uint64_t total = 0;
    for (const auto &[label, series] : kernels) {
      total += series.launches;
      EXPECT_GE(series.launches, last[label]) << label << " decreased in round " << round;
      last[label] = series.launches;
    }
    for (const auto &[label, value] : last)
      EXPECT_TRUE(kernels.contains(label) || value == 0) << label << " vanished in round " << round;
    std::uint64_t expected_total = 0;
    for (const auto c : counts)
      expected_total += c;
    EXPECT_EQ(total, expected_total) << "round " << round;
  }
  EXPECT_EQ(state_of(state).promoted, (FlatSet<std::string>{"k0", "k1"}));
  EXPECT_GT(launches_of(state, kOtherKernels), 0u);
}

TEST(CudaState, LaunchCountsForAVanishedProcessEntryClearTheSeries) {
  CudaState state(settings());
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xa, kVectorAdd));
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 5)});
  ASSERT_EQ(launches_of(state, "vectorAdd_kernel"), 5u);
  state.set_launch_counts({});
  EXPECT_TRUE(state_of(state).launch_totals.empty());
  EXPECT_TRUE(state_of(state).kernels.empty());
  // Names survive: they are not launch counts.
  EXPECT_EQ(state_of(state).kernel_names.size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Name bounds

CudaState::Settings name_bounds(std::size_t names_per_process, std::size_t bytes,
                                std::uint32_t max_kernels = 2) {
  auto s = settings(max_kernels);
  s.max_kernel_names_per_process = names_per_process;
  s.max_kernel_name_bytes = bytes;
  return s;
}

TEST(CudaStateNameBounds, AFloodKeepsTheBoundAndCountsEveryLaunch) {
  CudaState state(name_bounds(/*names_per_process=*/10, /*bytes=*/1 << 20));
  std::vector<LaunchCount> counts;
  for (int i = 0; i < 100; ++i) {
    state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0x1000 + i, "k" + std::to_string(i)));
    counts.push_back(launch(NT_API_LAUNCH_KERNEL, 0x1000 + i, 1));
  }
  counts.push_back(launch(NT_API_LAUNCH_KERNEL, 0x999, 5)); // never named
  state.set_launch_counts(counts);
  EXPECT_EQ(state_of(state).kernel_names.size(), 10u);
  EXPECT_EQ(state.kernel_names_dropped(), 90u);
  // Dropped names and the never-named handle are [other]: the daemon cannot tell them apart.
  EXPECT_EQ(labels(state), (std::set<std::string>{"k0", "k1", kOtherKernels}));
  EXPECT_EQ(launches_of(state, kOtherKernels), 98u + 5u);
  EXPECT_EQ(state_of(state).full_names().at(kOtherKernels).size(), 8u); // k2..k9
}

TEST(CudaStateNameBounds, UnnamedAndOverflowLaunchesAddUpInOther) {
  // Labels sorting before '[' (upper case) reach [other] before the unnamed launches do: both
  // must be summed, not the later replacing the earlier.
  CudaState state(name_bounds(/*names_per_process=*/3, 1 << 20, /*max_kernels=*/1));
  for (int i = 0; i < 4; ++i)
    state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0x10 + i, "K" + std::to_string(i)));
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0x10, 100),
                           launch(NT_API_LAUNCH_KERNEL, 0x11, 7),
                           launch(NT_API_LAUNCH_KERNEL, 0x12, 5),
                           launch(NT_API_LAUNCH_KERNEL, 0x13, 3)}); // 0x13's name was dropped
  EXPECT_EQ(labels(state), (std::set<std::string>{"K0", kOtherKernels}));
  EXPECT_EQ(launches_of(state, kOtherKernels), 7u + 5u + 3u);
  EXPECT_EQ(state_of(state).full_names().at(kOtherKernels), (FlatSet<std::string>{"K1", "K2"}));
}

TEST(CudaStateNameBounds, NeverFewerNamesThanSeries) {
  CudaState state(name_bounds(/*names_per_process=*/2, 1 << 20, /*max_kernels=*/5));
  for (int i = 0; i < 8; ++i)
    state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0x1000 + i, "k" + std::to_string(i)));
  EXPECT_EQ(state_of(state).kernel_names.size(), 5u);
}

TEST(CudaStateNameBounds, TotalBytesAreSharedAndGivenBackAtExit) {
  // "n0".."n9": 2 + 2 bytes of text and an entry each; room for ten.
  constexpr std::size_t kName = 4 + kKernelNameEntryBytes;
  CudaState state(name_bounds(/*names_per_process=*/100, /*bytes=*/10 * kName));
  const ProcessId other{99, 12};
  for (int i = 0; i < 4; ++i) {
    state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0x10 + i, "n" + std::to_string(i)));
    state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0x10 + i, "n" + std::to_string(i), 0,
                           static_cast<std::uint32_t>(other.pid), other.start_ticks));
  }
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0x20, "n9", 0,
                         static_cast<std::uint32_t>(other.pid), other.start_ticks));
  EXPECT_EQ(state.kernel_name_bytes(), 9 * kName);
  EXPECT_EQ(state.kernel_name_max_bytes(), 10 * kName);
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0x21, "n8", 0,
                         static_cast<std::uint32_t>(other.pid), other.start_ticks));
  EXPECT_EQ(state.kernel_name_bytes(), 10 * kName);                // exactly full
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0x22, "n7")); // kProc has room, the daemon not
  EXPECT_EQ(state.kernel_name_bytes(), 10 * kName);
  EXPECT_EQ(state.kernel_names_dropped(), 1u);
  EXPECT_EQ(state_of(state).kernel_names.dropped(), 1u);

  // The process exits: its names, and their bytes, go; the dropped count stays.
  const auto dropped = state.kernel_names_dropped();
  DiscoveryResult discovery;
  discovery.processes.push_back({kProc, "app", "/bin/app", {}, {}});
  state.update_processes(discovery, [](const ProcessId &) { return false; });
  EXPECT_FALSE(state.processes().contains(other));
  EXPECT_EQ(state.kernel_name_bytes(), 4 * kName);
  EXPECT_EQ(state.kernel_names_dropped(), dropped);
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0x22, "n7")); // room again
  EXPECT_EQ(state.kernel_name_bytes(), 5 * kName);
  // An exec replaces the image: the new one starts with no names either.
  state.forget_images({kProc});
  EXPECT_EQ(state.kernel_name_bytes(), 0u);
  EXPECT_EQ(state.kernel_names_dropped(), dropped);
}

TEST(CudaStateNameBounds, AnIdleProcessKeepsItsKernelsVersion) {
  CudaState state(settings());
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xa, kVectorAdd));
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 5)});
  const auto version = state.kernels_version();
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 5)});
  EXPECT_EQ(state.kernels_version(), version) << "nothing changed: nothing to rebuild";
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 6)});
  EXPECT_GT(state.kernels_version(), version);
  EXPECT_EQ(launches_of(state, "vectorAdd_kernel"), 6u);

  // A name arriving for a handle already counted changes the series without new counts.
  state.set_launch_counts(
      {launch(NT_API_LAUNCH_KERNEL, 0xa, 6), launch(NT_API_LAUNCH_KERNEL, 0xb, 1)});
  EXPECT_EQ(launches_of(state, kUnresolvedKernel), 1u);
  const auto before_name = state.kernels_version();
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xb, "late"));
  state.set_launch_counts(
      {launch(NT_API_LAUNCH_KERNEL, 0xa, 6), launch(NT_API_LAUNCH_KERNEL, 0xb, 1)});
  EXPECT_EQ(launches_of(state, "late"), 1u);
  EXPECT_GT(state.kernels_version(), before_name);

  // So does a context bound to a device after its launches were counted (the gpu label).
  state.apply(call(NT_API_PRIMARY_CTX_RETAIN, {0x7ffd0000, 1}, {0xc7}));
  state.set_launch_counts(
      {launch(NT_API_LAUNCH_KERNEL, 0xa, 6), launch(NT_API_LAUNCH_KERNEL, 0xb, 1)});
  EXPECT_EQ(state_of(state).kernels.at("late").launches_by_device.begin()->first, 1);
}

// /api/v1/kernels lists the full names behind a label: a handle renamed to another overload of
// the same short name changes no series, and still the document.
TEST(CudaStateNameBounds, ARenamedHandleChangesTheKernelsVersion) {
  CudaState state(settings());
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xa, "_Z6kernelPi"));
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 5)});
  EXPECT_EQ(state_of(state).full_names().at("kernel"), (FlatSet<std::string>{"kernel(int*)"}));
  const auto version = state.kernels_version();
  const auto series = state_of(state).kernels;
  state.apply(name_event(NT_API_MODULE_GET_FUNCTION, 0xa, "_Z6kernelPf"));
  state.set_launch_counts({launch(NT_API_LAUNCH_KERNEL, 0xa, 5)});
  EXPECT_EQ(state_of(state).kernels, series);
  EXPECT_GT(state.kernels_version(), version);
  EXPECT_EQ(state_of(state).full_names().at("kernel"), (FlatSet<std::string>{"kernel(float*)"}));
}

// ---------------------------------------------------------------------------------------------
// update_processes

TEST(CudaState, UpdateProcessesAppliesDiscoveryAndForgetsDeadOnes) {
  CudaState state(settings());
  const ProcessId p1{100, 1}, p2{200, 2}, p3{300, 3}, p4{400, 4};
  state.apply(alloc(NT_API_MEM_ALLOC, 0x1000, 10));
  for (const auto &id : {p1, p2, p3}) {
    auto e = alloc(NT_API_MEM_ALLOC, 0x1000, 10);
    e.tgid = static_cast<std::uint32_t>(id.pid);
    e.proc_start_ns = id.start_ticks * kNsPerTick;
    state.apply(e);
  }
  ASSERT_EQ(state.processes().size(), 4u); // kProc, p1, p2, p3

  DiscoveryResult discovery;
  discovery.processes.push_back(
      {p1, "trainer", "/usr/bin/python3", {{"abc", "docker", ""}, {}}, {}});
  discovery.processes.push_back({p4, "new", "/opt/new", {}, {}});
  std::vector<ProcessId> asked;
  const auto removed = state.update_processes(discovery, [&](const ProcessId &id) {
    asked.push_back(id);
    return id == p2; // p2 alive but no longer mapping libcuda; p3 and kProc gone
  });

  EXPECT_EQ(removed, (std::vector<ProcessId>{p3, kProc}));
  // Only processes missing from the scan are asked about.
  EXPECT_EQ(std::set<ProcessId>(asked.begin(), asked.end()), (std::set<ProcessId>{p2, p3, kProc}));
  ASSERT_EQ(state.processes().size(), 3u);
  const auto &s1 = state_of(state, p1);
  EXPECT_EQ(s1.comm, "trainer");
  EXPECT_EQ(s1.exe, "/usr/bin/python3");
  EXPECT_EQ(s1.container.identity.id, "abc");
  EXPECT_TRUE(s1.discovered);
  EXPECT_EQ(s1.memory[0].used_bytes, 10u); // state kept
  const auto &s2 = state_of(state, p2);
  EXPECT_FALSE(s2.discovered);
  EXPECT_EQ(s2.memory[0].used_bytes, 10u);
  const auto &s4 = state_of(state, p4);
  EXPECT_EQ(s4.comm, "new");
  EXPECT_TRUE(s4.discovered);

  // Metadata is refreshed on the next scan.
  discovery.processes[0].comm = "renamed";
  discovery.processes[0].container = {};
  EXPECT_TRUE(state.update_processes(discovery, [](const ProcessId &) { return true; }).empty());
  EXPECT_EQ(state_of(state, p1).comm, "renamed");
  EXPECT_EQ(state_of(state, p1).container.identity.id, "");
}

TEST(CudaState, UpdateProcessesMatchesEventsByStartTicks) {
  CudaState state(settings());
  state.apply(alloc(NT_API_MEM_ALLOC, 0x1000, 10));
  DiscoveryResult discovery;
  discovery.processes.push_back({kProc, "app", "/bin/app", {}, {}});
  // Same pid, different start: an older incarnation of the pid.
  discovery.processes.push_back({{kProc.pid, kStartTicks - 1}, "old", "/bin/old", {}, {}});
  state.update_processes(discovery, [](const ProcessId &) { return false; });
  ASSERT_EQ(state.processes().size(), 2u);
  EXPECT_EQ(state_of(state).comm, "app");
  EXPECT_EQ(state_of(state).memory[0].used_bytes, 10u);
}

// ---------------------------------------------------------------------------------------------
// Throughput smoothing

TEST(CudaState, ThroughputConvergesAndDecays) {
  CudaState state(settings(50, /*window=*/10));
  // 1000 bytes/s of h2d, ticked every second.
  state.apply(copy(NT_API_MEMCPY_HTOD, 1, 2, 1000));
  state.tick(1.0);
  const double alpha = 1.0 - std::exp(-0.1);
  const auto h2d = static_cast<std::size_t>(CopyDirection::h2d);
  EXPECT_NEAR(state_of(state).copy_throughput[h2d], alpha * 1000, 1e-9);
  for (int i = 0; i < 99; ++i) {
    state.apply(copy(NT_API_MEMCPY_HTOD, 1, 2, 1000));
    state.tick(1.0);
  }
  const double converged = state_of(state).copy_throughput[h2d];
  EXPECT_NEAR(converged, 1000.0, 1.0);
  EXPECT_LE(converged, 1000.0);
  for (std::size_t i = 0; i < kCopyDirections; ++i) {
    if (i != h2d) {
      EXPECT_EQ(state_of(state).copy_throughput[i], 0.0);
    }
  }

  // Ticking without elapsed time changes nothing.
  state.tick(0);
  state.tick(-1);
  EXPECT_EQ(state_of(state).copy_throughput[h2d], converged);

  // No more copies: the rate decays toward zero.
  state.tick(1.0);
  EXPECT_NEAR(state_of(state).copy_throughput[h2d], converged * std::exp(-0.1), 1e-9);
  for (int i = 0; i < 200; ++i)
    state.tick(1.0);
  EXPECT_LT(state_of(state).copy_throughput[h2d], 1e-3);
  EXPECT_GE(state_of(state).copy_throughput[h2d], 0.0);
}

TEST(CudaState, ThroughputUsesElapsedTime) {
  CudaState state(settings(50, /*window=*/1));
  // 5000 bytes over 0.5 s is 10000 bytes/s; a long tick relative to the window takes most of it.
  state.apply(copy(NT_API_MEMCPY_DTOD, 1, 2, 5000));
  state.tick(0.5);
  const auto d2d = static_cast<std::size_t>(CopyDirection::d2d);
  EXPECT_NEAR(state_of(state).copy_throughput[d2d], (1 - std::exp(-0.5)) * 10000, 1e-6);
  for (int i = 0; i < 50; ++i) {
    state.apply(copy(NT_API_MEMCPY_DTOD, 1, 2, 5000));
    state.tick(0.5);
  }
  EXPECT_NEAR(state_of(state).copy_throughput[d2d], 10000.0, 1e-3);
}

} // namespace
} // namespace neutracer

// ---------------------------------------------------------------------------------------------
// What the detectors see: the memory change log and exits

namespace neutracer {
namespace {

TEST(CudaStateMemoryChanges, LogsGpuAllocationsFreesAndFailuresInOrder) {
  CudaState state(settings());
  state.apply(alloc(NT_API_MEM_ALLOC, 0x1000, 100));
  state.apply(alloc(NT_API_MEM_ALLOC_MANAGED, 0x9000, 50));
  state.apply(alloc(NT_API_MEM_HOST_ALLOC, 0x5000, 7)); // host pinned: not GPU memory
  state.apply(alloc(NT_API_MEM_ALLOC, 0, 1 << 30, 2));  // OUT_OF_MEMORY
  state.apply(call(NT_API_MEM_ALLOC_PITCH, {0, 0, 300, 4, 4}, {}, 2));
  state.apply(free_call(NT_API_MEM_FREE, 0x1000));
  const auto id = ProcessId{static_cast<int>(kPid), kStartTicks};
  EXPECT_EQ(state.processes().at(id).gpu_bytes_in_use(), 50u);
  EXPECT_EQ(state.processes().at(id).failed_allocations, 2u);

  auto changes = state.take_memory_changes();
  ASSERT_EQ(changes.size(), 1u);
  const auto &log = changes.at(id);
  ASSERT_EQ(log.size(), 5u);
  EXPECT_EQ(log[0].kind, MemoryChangeKind::allocation);
  EXPECT_EQ(log[0].address, 0x1000u);
  EXPECT_EQ(log[0].bytes, 100u);
  EXPECT_EQ(log[0].used_after, 100u);
  EXPECT_EQ(log[0].time_ns, 2'000'000u);
  EXPECT_EQ(log[1].used_after, 150u);
  EXPECT_EQ(log[2].kind, MemoryChangeKind::failed_allocation);
  EXPECT_EQ(log[2].bytes, 1u << 30);
  EXPECT_EQ(log[2].error, 2u);
  EXPECT_EQ(log[2].used_after, 150u);
  EXPECT_EQ(log[3].bytes, 1200u); // width x height of the pitched request
  EXPECT_EQ(log[4].kind, MemoryChangeKind::free);
  EXPECT_EQ(log[4].address, 0x1000u);
  EXPECT_EQ(log[4].bytes, 100u);
  EXPECT_EQ(log[4].used_after, 50u);
  // Taken means emptied.
  EXPECT_TRUE(state.take_memory_changes().empty());
}

TEST(CudaStateMemoryChanges, AllocationsCarryTheirNativeAndPythonStacks) {
  CudaState state(settings());
  auto allocation = alloc(NT_API_MEM_ALLOC, 0x1000, 100);
  allocation.stack_id = 5;
  allocation.python_stack = 0xab;
  state.apply(allocation);
  auto failure = alloc(NT_API_MEM_ALLOC, 0, 1 << 30, 2);
  failure.stack_id = 6;
  failure.python_stack = 0xcd;
  state.apply(failure);
  auto release = free_call(NT_API_MEM_FREE, 0x1000);
  release.stack_id = 7;
  release.python_stack = 0xef;
  state.apply(release);
  const auto changes = state.take_memory_changes();
  const auto &log = changes.at(ProcessId{static_cast<int>(kPid), kStartTicks});
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].stack_id, 5);
  EXPECT_EQ(log[0].python_stack, 0xabu);
  EXPECT_EQ(log[1].stack_id, 6);
  EXPECT_EQ(log[1].python_stack, 0xcdu);
  EXPECT_EQ(log[2].stack_id, NT_NO_STACK) << "a free has no site";
  EXPECT_EQ(log[2].python_stack, 0u);
}

TEST(CudaStateMemoryChanges, LogIsBoundedAndCountsWhatItDrops) {
  CudaState state(settings());
  for (std::uint64_t i = 0; i < kMaxMemoryChangesPerScan + 10; ++i)
    state.apply(alloc(NT_API_MEM_ALLOC, 0x1000 + i * 16, 16));
  const auto id = ProcessId{static_cast<int>(kPid), kStartTicks};
  EXPECT_EQ(state.processes().at(id).memory_changes_dropped, 10u);
  EXPECT_EQ(state.take_memory_changes().at(id).size(), kMaxMemoryChangesPerScan);
}

TEST(CudaStateMemoryChanges, ExitedProcessesReportTheGpuMemoryTheyHeld) {
  CudaState state(settings());
  state.apply(alloc(NT_API_MEM_ALLOC, 0x1000, 4096));
  state.apply(alloc(NT_API_MEM_HOST_ALLOC, 0x5000, 7));
  state.update_processes({}, [](const ProcessId &) { return false; });
  const auto exited = state.take_exited();
  ASSERT_EQ(exited.size(), 1u);
  EXPECT_EQ(exited[0].id.pid, static_cast<int>(kPid));
  EXPECT_EQ(exited[0].gpu_bytes_in_use, 4096u);
  EXPECT_TRUE(state.take_exited().empty());
}

} // namespace
} // namespace neutracer
