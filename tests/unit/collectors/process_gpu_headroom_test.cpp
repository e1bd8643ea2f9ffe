// SPDX-License-Identifier: Apache-2.0
// The free memory the detectors see per process: that of the GPU holding most of its memory,
// as NVML reports it, matched through the process's host GPU labels.
#include "collectors/process_gpu_headroom.h"

#include <gtest/gtest.h>

#include "call_event.h"

namespace neutracer {
namespace {

constexpr std::uint32_t kPid = 900;
constexpr std::uint64_t kStartTicks = 77;
const ProcessId kProc{static_cast<int>(kPid), kStartTicks};

nt_call_event call(nt_api api, std::uint64_t context, std::initializer_list<std::uint64_t> args,
                   std::initializer_list<std::uint64_t> out = {}) {
  auto e = test::call_event(api, kPid, kStartTicks * 10'000'000, args, out);
  e.context = context;
  return e;
}

// 100 bytes on ordinal 0 and 300 on ordinal 1, which the process sees as host GPUs 2 and 3.
CudaState two_gpu_process() {
  CudaState::Settings settings;
  settings.ticks_per_second = 100;
  CudaState state(settings);
  state.apply(call(NT_API_PRIMARY_CTX_RETAIN, 0, {0x7ffd0000, 0}, {0xa0}));
  state.apply(call(NT_API_PRIMARY_CTX_RETAIN, 0, {0x7ffd0000, 1}, {0xb0}));
  state.apply(call(NT_API_MEM_ALLOC, 0xa0, {0x7ffd1000, 100}, {0x1000}));
  state.apply(call(NT_API_MEM_ALLOC, 0xb0, {0x7ffd1000, 300}, {0x9000}));
  state.set_visible_gpus(kProc, {"2", "3"});
  return state;
}

NvmlDeviceSample gpu(unsigned index, std::uint64_t total, std::uint64_t used) {
  NvmlDeviceSample sample;
  sample.device.index = index;
  sample.memory_total_bytes = total;
  sample.memory_used_bytes = used;
  return sample;
}

TEST(ProcessGpuHeadroom, TheGpuHoldingMostOfTheProcessesMemory) {
  const auto state = two_gpu_process();
  NvmlSnapshot nvml;
  nvml.in_use = true;
  nvml.devices = {gpu(2, 1000, 100), gpu(3, 5000, 1000)};
  const auto free = process_gpu_headroom(state, nvml);
  ASSERT_TRUE(free.contains(kProc));
  EXPECT_EQ(free.at(kProc).free_bytes, 4000u); // host GPU 3: ordinal 1, 300 of the 400 bytes
  EXPECT_EQ(free.at(kProc).process_bytes, 400u);
}

TEST(ProcessGpuHeadroom, NothingWhereTheGpuOrItsReadingIsUnknown) {
  const auto state = two_gpu_process();
  NvmlSnapshot nvml;
  EXPECT_TRUE(process_gpu_headroom(state, nvml).empty()); // no NVML
  nvml.devices = {gpu(2, 1000, 100)};                     // GPU 3 not sampled
  EXPECT_TRUE(process_gpu_headroom(state, nvml).empty());
  nvml.devices = {gpu(3, 1000, 2000)}; // used above total: not a reading to trust
  EXPECT_TRUE(process_gpu_headroom(state, nvml).empty());
  auto partial = gpu(3, 1000, 0);
  partial.memory_used_bytes.reset();
  nvml.devices = {partial};
  EXPECT_TRUE(process_gpu_headroom(state, nvml).empty());
}

TEST(DeviceHeadroom, FreeMemoryFollowsTheProcessesOwnChangesSinceTheReading) {
  const DeviceHeadroom room{1000, 400};
  EXPECT_EQ(room.free_at(400), 1000u);
  EXPECT_EQ(room.free_at(900), 500u);  // it allocated 500 more
  EXPECT_EQ(room.free_at(100), 1300u); // it freed 300
  EXPECT_EQ(room.free_at(5000), 0u);   // never below empty
}

} // namespace
} // namespace neutracer
