// SPDX-License-Identifier: Apache-2.0
// End to end, as root: which GPU each allocation, copy and launch lands on, from the thread's
// current context (cuCtxSetCurrent / cuCtxCreate / cuCtxPopCurrent) joined with the contexts'
// devices (cuDevicePrimaryCtxRetain / cuCtxCreate), against the stand-in driver.
#include <gtest/gtest.h>
#include <string>

#include "e2e_fixture.h"

namespace neutracer::test {
namespace {

class GpuAttributionE2E : public DaemonE2E {};

TEST_F(GpuAttributionE2E, ChargesEachCallToTheCurrentContextsDevice) {
  // GPU 0: 2 x 1 MiB, 5 launches, 3 copies of 4 KiB (the h2d step allocates its 4 KiB buffer
  // and frees it again).
  // GPU 1: 2 MiB through its primary context, 4 KiB through a created context that is then
  // popped, and 7 + 1 launches. The environment pins nothing, so ordinals are the labels.
  auto scenario = run_scenario({}, {"device:0", "alloc:1048576:2", "launch:k:5", "h2d:4096:3",
                                    "device:1", "alloc:2097152:1", "launch:k:7", "ctx_create:1",
                                    "alloc:4096:1", "ctx_pop", "launch:k:1"});
  const auto s = scrape();
  const auto on = [&](const std::string &gpu, const std::string &name, const std::string &value) {
    return std::vector<std::pair<std::string, std::string>>{
        {"pid", scenario.pid}, {"comm", kComm}, {"gpu", gpu}, {name, value}};
  };
  EXPECT_EQ(value(s, "neutracer_cuda_memory_used_bytes", on("0", "kind", "device")), 2 * 1048576);
  EXPECT_EQ(value(s, "neutracer_cuda_memory_used_bytes", on("1", "kind", "device")),
            2097152 + 4096);
  EXPECT_EQ(value(s, "neutracer_cuda_memory_allocations_total", on("0", "kind", "device")), 2 + 1);
  EXPECT_EQ(value(s, "neutracer_cuda_memory_freed_bytes_total", on("0", "kind", "device")), 4096);
  EXPECT_EQ(value(s, "neutracer_cuda_kernel_launches_total", on("0", "kernel", "k")), 5);
  EXPECT_EQ(value(s, "neutracer_cuda_kernel_launches_total", on("1", "kernel", "k")), 8);
  EXPECT_EQ(value(s, "neutracer_cuda_memcpy_bytes_total", on("0", "direction", "h2d")), 3 * 4096);
  // No copy on GPU 1: no series there (-1: absent).
  EXPECT_EQ(value(s, "neutracer_cuda_memcpy_bytes_total", on("1", "direction", "h2d")), -1);
  // Nothing went unattributed.
  EXPECT_EQ(value(s, "neutracer_cuda_memory_used_bytes", on("unknown", "kind", "device")), -1);
  EXPECT_EQ(value(s, "neutracer_cuda_kernel_launches_total", on("unknown", "kernel", "k")), -1);
  finish(scenario);
}

TEST_F(GpuAttributionE2E, CudaVisibleDevicesMapsOrdinalsToHostGpus) {
  // The process sees host GPU 3 as its device 0: the label is the host's index.
  auto scenario =
      run_scenario({}, {"device:0", "alloc:65536:1", "launch:k:2"}, {"CUDA_VISIBLE_DEVICES=3"});
  const auto s = scrape();
  EXPECT_EQ(value(s, "neutracer_cuda_memory_used_bytes",
                  {{"pid", scenario.pid}, {"gpu", "3"}, {"kind", "device"}}),
            65536);
  EXPECT_EQ(value(s, "neutracer_cuda_kernel_launches_total",
                  {{"pid", scenario.pid}, {"gpu", "3"}, {"kernel", "k"}}),
            2);
  EXPECT_EQ(value(s, "neutracer_cuda_memory_used_bytes",
                  {{"pid", scenario.pid}, {"gpu", "0"}, {"kind", "device"}}),
            -1);
  finish(scenario);
}

TEST_F(GpuAttributionE2E, OneVisibleGpuNamesCallsMadeBeforeTheDaemonSawAContext) {
  // The context was made current before the daemon attached; with one visible GPU every call
  // still belongs to it.
  auto scenario = run_scenario({"device:0"}, {"alloc:8192:1"}, {"CUDA_VISIBLE_DEVICES=1"});
  EXPECT_EQ(value(scrape(), "neutracer_cuda_memory_used_bytes",
                  {{"pid", scenario.pid}, {"gpu", "1"}, {"kind", "device"}}),
            8192);
  finish(scenario);
}

} // namespace
} // namespace neutracer::test
