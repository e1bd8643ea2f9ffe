// SPDX-License-Identifier: Apache-2.0
// CudaState: Processes from discovery, throughput smoothing, and what the detectors see: memory
// changes and exits.
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

// ---------------------------------------------------------------------------------------------
// What the detectors see: the memory change log and exits

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
