// SPDX-License-Identifier: Apache-2.0
// Which GPU each allocation, copy and launch belongs to: contexts bound to devices by
// primary-context retains and creations, joined with the calling thread's current context.
#include "cuda/cuda_state.h"

#include "call_event.h"

#include <gtest/gtest.h>

#include <initializer_list>

namespace neutracer {
namespace {

constexpr std::uint64_t kNsPerTick = 10'000'000; // ticks_per_second = 100
constexpr std::uint32_t kPid = 900;
constexpr std::uint64_t kStartTicks = 77;
const ProcessId kProc{static_cast<int>(kPid), kStartTicks};
constexpr std::uint64_t kContextA = 0x5500a0;
constexpr std::uint64_t kContextB = 0x5500b0;

CudaState make_state() {
  CudaState::Settings settings;
  settings.ticks_per_second = 100;
  return CudaState(settings);
}

nt_call_event call(nt_api api, std::uint64_t context, std::initializer_list<std::uint64_t> args,
                   std::initializer_list<std::uint64_t> out = {}) {
  auto e = test::call_event(api, kPid, kStartTicks * kNsPerTick, args, out);
  e.context = context;
  return e;
}

nt_call_event retain(std::uint64_t context, int device) {
  return call(NT_API_PRIMARY_CTX_RETAIN, 0, {0x7ffd0000, static_cast<std::uint64_t>(device)},
              {context});
}

nt_call_event alloc(std::uint64_t context, std::uint64_t address, std::uint64_t size) {
  return call(NT_API_MEM_ALLOC, context, {0x7ffd1000, size}, {address});
}

const ProcessState &process(const CudaState &state) { return state.processes().at(kProc); }

std::uint64_t used(const CudaState &state, int device) {
  return process(state).devices.at(device).memory[0].used_bytes;
}

TEST(CudaStateDevices, AllocationsFreesAndCopiesFollowTheCurrentContext) {
  auto state = make_state();
  state.apply(retain(kContextA, 0));
  state.apply(retain(kContextB, 1));
  state.apply(alloc(kContextA, 0x1000, 100));
  state.apply(alloc(kContextB, 0x9000, 300));
  state.apply(alloc(kContextB, 0xa000, 50));
  EXPECT_EQ(used(state, 0), 100u);
  EXPECT_EQ(used(state, 1), 350u);
  EXPECT_EQ(process(state).memory[0].used_bytes, 450u); // the process total is unchanged

  // A free is charged to the allocation's device, whatever context is current at the free.
  state.apply(call(NT_API_MEM_FREE, kContextA, {0x9000}));
  EXPECT_EQ(used(state, 0), 100u);
  EXPECT_EQ(used(state, 1), 50u);
  EXPECT_EQ(process(state).devices.at(1).memory[0].freed_bytes, 300u);

  state.apply(call(NT_API_MEMCPY_HTOD, kContextB, {0xa000, 0x7000, 40}));
  state.apply(call(NT_API_MEMCPY_DTOH, kContextA, {0x7000, 0x1000, 8}));
  EXPECT_EQ(process(state).devices.at(1).copy_bytes[0], 40u);
  EXPECT_EQ(process(state).devices.at(0).copy_bytes[1], 8u);
  EXPECT_EQ(process(state).copy_bytes[0], 40u);
}

TEST(CudaStateDevices, ContextCreationVariantsNameTheirDeviceArgument) {
  auto state = make_state();
  state.apply(call(NT_API_CTX_CREATE, 0, {0x7ffd0000, 0, 3}, {0xc2}));
  state.apply(call(NT_API_CTX_CREATE_V3, 0, {0x7ffd0000, 0, 0, 0, 2}, {0xc3}));
  state.apply(call(NT_API_CTX_CREATE_V4, 0, {0x7ffd0000, 0, 0, 1}, {0xc4}));
  EXPECT_EQ(process(state).device_of(0xc2), 3);
  EXPECT_EQ(process(state).device_of(0xc3), 2);
  EXPECT_EQ(process(state).device_of(0xc4), 1);
}

TEST(CudaStateDevices, FailedOrEmptyRetainBindsNothing) {
  auto state = make_state();
  auto failed = retain(kContextA, 1);
  failed.result = 2;
  state.apply(failed);
  state.apply(retain(0, 1)); // no context written
  state.apply(alloc(kContextA, 0x1000, 10));
  EXPECT_TRUE(process(state).context_devices.empty());
  EXPECT_EQ(used(state, kUnknownDevice), 10u);
}

TEST(CudaStateDevices, UnknownContextFallsBackOnlyWhenTheDeviceIsCertain) {
  auto state = make_state();
  // Nothing known: unknown.
  state.apply(alloc(0, 0x1000, 1));
  EXPECT_EQ(used(state, kUnknownDevice), 1u);
  // Every context the process bound is on device 2: a context set before we attached is too.
  state.apply(retain(kContextA, 2));
  state.apply(alloc(0xdead, 0x2000, 2));
  EXPECT_EQ(used(state, 2), 2u);
  // A second device makes it ambiguous again.
  state.apply(retain(kContextB, 0));
  state.apply(alloc(0xdead, 0x3000, 4));
  EXPECT_EQ(used(state, kUnknownDevice), 5u);
}

TEST(CudaStateDevices, OneVisibleGpuIsTheDeviceOfEveryCall) {
  auto state = make_state();
  DiscoveryResult discovery;
  discovery.processes.push_back({kProc, "python3", "/usr/bin/python3", {}, {}});
  state.update_processes(discovery, [](const ProcessId &) { return true; });
  ASSERT_EQ(state.processes_without_visible_gpus(), std::vector<ProcessId>{kProc});
  state.set_visible_gpus(kProc, {"3"});
  EXPECT_TRUE(state.processes_without_visible_gpus().empty());
  state.apply(alloc(0, 0x1000, 64));
  EXPECT_EQ(used(state, 0), 64u);
  EXPECT_EQ(process(state).gpu_label(0), "3"); // CUDA_VISIBLE_DEVICES=3: ordinal 0 is GPU 3
  EXPECT_EQ(process(state).gpu_label(kUnknownDevice), kUnknownGpu);
}

TEST(CudaStateDevices, LabelsAreOrdinalsWithoutAVisibleList) {
  auto state = make_state();
  state.apply(retain(kContextA, 1));
  EXPECT_EQ(process(state).gpu_label(1), "1");
  EXPECT_EQ(process(state).gpu_label(5), "5");
}

TEST(CudaStateDevices, LaunchesCountPerKernelAndDevice) {
  auto state = make_state();
  state.apply(retain(kContextA, 0));
  state.apply(retain(kContextB, 1));
  NameEvent name;
  name.api = NT_API_MODULE_GET_FUNCTION;
  name.tgid = kPid;
  name.proc_start_ns = kStartTicks * kNsPerTick;
  name.handle = 0xf1;
  name.name = "_Z4gemmPfS_S_i";
  state.apply(name);
  const std::uint64_t start_ns = kStartTicks * kNsPerTick;
  state.set_launch_counts({{kPid, start_ns, NT_API_LAUNCH_KERNEL, 0xf1, 7, kContextA},
                           {kPid, start_ns, NT_API_LAUNCH_KERNEL, 0xf1, 11, kContextB},
                           {kPid, start_ns, NT_API_LAUNCH_KERNEL, 0xf1, 2, 0}});
  const auto &series = process(state).kernels.at("gemm");
  EXPECT_EQ(series.launches, 20u);
  EXPECT_EQ(series.launches_by_device.at(0), 7u);
  EXPECT_EQ(series.launches_by_device.at(1), 11u);
  EXPECT_EQ(series.launches_by_device.at(kUnknownDevice), 2u);
}

} // namespace
} // namespace neutracer
