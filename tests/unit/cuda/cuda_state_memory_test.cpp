// SPDX-License-Identifier: Apache-2.0
// CudaState: Process identity, memory accounting by kind, and copies by direction.
#include "cuda/cuda_state.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cuda/cuda_state_events.h"

namespace neutracer {
namespace {

using namespace cuda_state_test;

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

} // namespace
} // namespace neutracer
