// SPDX-License-Identifier: Apache-2.0
// Busy GPU time and accounting records per traced process as metric families: process labels,
// series only for what NVML gave, nothing for processes the state no longer has.
#include "exporters/process_gpu_time_metrics.h"

#include <gtest/gtest.h>

#include "exporters/gpu_health_metrics.h"
#include "metric_lookup.h"

namespace neutracer {
namespace {

using test::family;
using test::label;

const ContainerInfo kInPod{{"3f4e9c1d2b7a8e6f5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e",
                            "containerd", "5f3e1a2b-4c6d-4e8f-9a0b-1c2d3e4f5a6b"},
                           {"ml", "trainer-0", "pytorch"}};
const ProcessId kTrainer{10, 100};
const ProcessId kIdle{11, 101};
const ProcessId kGone{12, 102}; // exited between the sample and the publish

CudaState state_with_two_processes() {
  CudaState state({50, 10, 100, {}});
  DiscoveryResult discovery;
  discovery.processes.push_back({kTrainer, "python3", "/usr/bin/python3", kInPod, {}});
  discovery.processes.push_back({kIdle, "idle", "/opt/idle", {}, {}});
  state.update_processes(discovery, [](const ProcessId &) { return true; });
  return state;
}

NvmlSnapshot snapshot_in_use() {
  NvmlSnapshot snapshot;
  snapshot.in_use = true;
  snapshot.ready = true;
  return snapshot;
}

TEST(ProcessGpuTimeMetrics, BusySecondsPerProcessAndGpuWithProcessLabels) {
  auto snapshot = snapshot_in_use();
  snapshot.process_gpu_time = {
      {kTrainer, 0, 12.5, 3.25}, {kTrainer, 3, 1.0, 0.5}, {kGone, 0, 9.0, 9.0}};
  const auto families = process_gpu_time_families(snapshot, state_with_two_processes());

  const auto &sm = family(families, "neutracer_process_gpu_busy_seconds_total");
  EXPECT_EQ(sm.type, MetricType::counter);
  ASSERT_EQ(sm.samples.size(), 2u); // kIdle had no sample, kGone is not in the state
  EXPECT_EQ(sm.samples[0].labels, (Labels{{"pid", "10"},
                                          {"comm", "python3"},
                                          {"container", "pytorch"},
                                          {"container_id", std::string(kInPod.identity.id)},
                                          {"namespace", "ml"},
                                          {"pod", "trainer-0"},
                                          {"gpu", "0"}}));
  EXPECT_DOUBLE_EQ(sm.samples[0].value, 12.5);
  EXPECT_EQ(label(sm.samples[1].labels, "gpu"), "3");
  EXPECT_DOUBLE_EQ(sm.samples[1].value, 1.0);
  const auto &memory = family(families, "neutracer_process_gpu_memory_busy_seconds_total");
  ASSERT_EQ(memory.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(memory.samples[0].value, 3.25);
  EXPECT_DOUBLE_EQ(memory.samples[1].value, 0.5);
}

TEST(ProcessGpuTimeMetrics, AccountingSeriesOnlyForWhatNvmlGave) {
  auto snapshot = snapshot_in_use();
  NvmlAccountingStats full;
  full.gpu_percent = 63;
  full.memory_percent = 21;
  full.max_memory_bytes = 805306368;
  NvmlAccountingStats partial; // NVML_VALUE_NOT_AVAILABLE for both shares
  partial.max_memory_bytes = 1024;
  snapshot.process_accounting = {{kTrainer, 0, full}, {kIdle, 1, partial}, {kGone, 0, full}};
  const auto families = process_gpu_time_families(snapshot, state_with_two_processes());

  const auto &share = family(families, "neutracer_process_gpu_accounting_utilization_ratio");
  EXPECT_EQ(share.type, MetricType::gauge);
  ASSERT_EQ(share.samples.size(), 1u);
  EXPECT_EQ(label(share.samples[0].labels, "pid"), "10");
  EXPECT_EQ(label(share.samples[0].labels, "gpu"), "0");
  EXPECT_DOUBLE_EQ(share.samples[0].value, 0.63);
  const auto &memory_share =
      family(families, "neutracer_process_gpu_accounting_memory_utilization_ratio");
  ASSERT_EQ(memory_share.samples.size(), 1u);
  EXPECT_DOUBLE_EQ(memory_share.samples[0].value, 0.21);
  const auto &max_memory = family(families, "neutracer_process_gpu_accounting_max_memory_bytes");
  ASSERT_EQ(max_memory.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(max_memory.samples[0].value, 805306368.0);
  EXPECT_EQ(label(max_memory.samples[1].labels, "pid"), "11");
  EXPECT_DOUBLE_EQ(max_memory.samples[1].value, 1024.0);
}

TEST(ProcessGpuTimeMetrics, EveryFamilyWhileNvmlIsInUseNoneWithout) {
  const auto state = state_with_two_processes();
  const auto families = process_gpu_time_families(snapshot_in_use(), state);
  ASSERT_EQ(families.size(), 5u);
  for (const auto &f : families) {
    EXPECT_TRUE(f.samples.empty()) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
  }
  EXPECT_TRUE(process_gpu_time_families(NvmlSnapshot{}, state).empty());
}

} // namespace
} // namespace neutracer
