// SPDX-License-Identifier: Apache-2.0
#include "exporters/cuda_metrics.h"
#include "exporters/launch_metrics.h"
#include "exposition/exposition.h"

#include <gtest/gtest.h>

#include "call_event.h"
#include "exposition/text_sink.h"
#include "golden_file.h"
#include "metric_lookup.h"

#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace neutracer {
namespace {

constexpr std::uint64_t kNsPerTick = 10'000'000; // ticks_per_second = 100
// Contexts of GPU 0 and 1, bound by the primary-context retains in deterministic_state().
constexpr std::uint64_t kContext0 = 0xc0;
constexpr std::uint64_t kContext1 = 0xc1;
constexpr const char *kContainer =
    "3f4e9c1d2b7a8e6f5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e";
constexpr const char *kPodUid = "5f3e1a2b-4c6d-4e8f-9a0b-1c2d3e4f5a6b";

nt_call_event call(std::uint32_t tgid, std::uint64_t start_ticks, nt_api api,
                   std::initializer_list<std::uint64_t> args,
                   std::initializer_list<std::uint64_t> out = {}, std::uint32_t result = 0) {
  auto e = test::call_event(api, tgid, start_ticks * kNsPerTick, args, out, result);
  e.context = kContext0;
  return e;
}

nt_call_event sync_call(std::uint32_t tgid, std::uint64_t start_ticks, nt_api api,
                        std::uint64_t wait_ns, std::uint32_t result = 0) {
  auto e = call(tgid, start_ticks, api, {0}, {}, result);
  e.enter_ns = 1'000'000'000;
  e.exit_ns = e.enter_ns + wait_ns;
  return e;
}

NameEvent name(std::uint32_t tgid, std::uint64_t start_ticks, std::uint64_t handle,
               std::string mangled) {
  NameEvent e;
  e.api = NT_API_MODULE_GET_FUNCTION;
  e.tgid = tgid;
  e.proc_start_ns = start_ticks * kNsPerTick;
  e.handle = handle;
  e.name = std::move(mangled);
  return e;
}

LaunchCount launch(std::uint32_t tgid, std::uint64_t start_ticks, nt_api api, std::uint64_t handle,
                   std::uint64_t count) {
  return {tgid, start_ticks * kNsPerTick, api, handle, count, kContext0};
}

// Two processes with every kind of series; all values exactly representable.
CudaState deterministic_state() {
  CudaState::Settings settings;
  settings.max_kernels_per_process = 2;
  settings.throughput_window_seconds = 10;
  settings.ticks_per_second = 100;
  CudaState state(settings);

  // Process 1001: in a Kubernetes pod's container, with kernels, memory, copies, syncs and
  // errors.
  const std::uint32_t a = 1001;
  const std::uint64_t as = 500;
  state.apply(call(a, as, NT_API_PRIMARY_CTX_RETAIN, {0, 0}, {kContext0}));
  state.apply(call(a, as, NT_API_PRIMARY_CTX_RETAIN, {0, 1}, {kContext1}));
  state.apply(name(a, as, 0xf1, "_Z16vectorAdd_kernelPKfS0_Pfi"));
  state.apply(name(a, as, 0xf2, "_Z4gemmPfS_S_i"));
  state.apply(name(a, as, 0xf3, "triton_poi_fused_add_0"));
  state.set_launch_counts({launch(a, as, NT_API_LAUNCH_KERNEL, 0xf1, 120),
                           launch(a, as, NT_API_LAUNCH_KERNEL, 0xf2, 64),
                           launch(a, as, NT_API_LAUNCH_KERNEL, 0xf3, 3),
                           launch(a, as, NT_API_LAUNCH_KERNEL, 0xdead, 5),
                           launch(a, as, NT_API_GRAPH_LAUNCH, 0x9000, 7),
                           {a, as * kNsPerTick, NT_API_LAUNCH_KERNEL, 0xf1, 30, kContext1}});
  auto on_gpu1 = call(a, as, NT_API_MEM_ALLOC, {0, 3 << 20}, {0x7e1000000000});
  on_gpu1.context = kContext1;
  state.apply(on_gpu1);
  auto to_gpu1 = call(a, as, NT_API_MEMCPY_HTOD, {0x7e1000000000, 0x1000, 4096});
  to_gpu1.context = kContext1;
  state.apply(to_gpu1);
  state.apply(call(a, as, NT_API_MEM_ALLOC, {0, 1 << 20}, {0x7e0000000000}));
  state.apply(call(a, as, NT_API_MEM_ALLOC, {0, 4096}, {0x7e0000200000}));
  state.apply(call(a, as, NT_API_MEM_FREE, {0x7e0000200000}));
  state.apply(call(a, as, NT_API_MEM_ALLOC_MANAGED, {0, 65536, 1}, {0x7f0000000000}));
  state.apply(call(a, as, NT_API_MEM_ALLOC_HOST, {0, 8192}, {0x555500000000}));
  state.apply(call(a, as, NT_API_MEM_CREATE, {0, 2 << 20, 0, 0}, {0xbeef}));
  state.apply(call(a, as, NT_API_MEM_FREE, {0x1234}));                 // unknown free
  state.apply(call(a, as, NT_API_MEM_ALLOC, {0, 1ull << 40}, {0}, 2)); // OOM
  state.apply(call(a, as, NT_API_MEMCPY_HTOD, {0x7e0000000000, 0x1000, 1024}));
  state.apply(call(a, as, NT_API_MEMCPY_DTOH, {0x1000, 0x7e0000000000, 512}));
  state.apply(call(a, as, NT_API_MEMCPY, {0x7e0000000000, 0x555500000000, 256}));
  state.apply(call(a, as, NT_API_MEMCPY_PEER, {0, 0, 0, 0, 2048}));
  state.apply(call(a, as, NT_API_MEMCPY, {0x10, 0x20, 128}));
  // No tick(): smoothed throughput goes through exp(), which the golden file should not depend
  // on; cuda_state_test.cpp covers it.
  state.apply(sync_call(a, as, NT_API_STREAM_SYNCHRONIZE, 250'000'000));
  state.apply(sync_call(a, as, NT_API_STREAM_SYNCHRONIZE, 2'000'000));
  state.apply(sync_call(a, as, NT_API_CTX_SYNCHRONIZE, 125'000'000'000)); // beyond 60 s
  state.apply(sync_call(a, as, NT_API_EVENT_SYNCHRONIZE, 0, 400));
  state.set_inflight_calls({{a, a, as * kNsPerTick, NT_API_STREAM_SYNCHRONIZE, 1'000'000'000}},
                           1'500'000'000);

  // Process 77: no container but a Slurm job, a comm that needs escaping, almost nothing else.
  const std::uint32_t b = 77;
  const std::uint64_t bs = 12;
  state.apply(call(b, bs, NT_API_MEM_ALLOC_PITCH, {0, 0, 500, 3, 4}, {0x7e0000000000, 512}));
  // Its launches are sampled: an estimate, exported apart from the exact counts.
  state.apply(name(b, bs, 0xb1, "_Z6decodev"));
  state.set_launch_counts({launch(a, as, NT_API_LAUNCH_KERNEL, 0xf1, 120),
                           launch(a, as, NT_API_LAUNCH_KERNEL, 0xf2, 64),
                           launch(a, as, NT_API_LAUNCH_KERNEL, 0xf3, 3),
                           launch(a, as, NT_API_LAUNCH_KERNEL, 0xdead, 5),
                           launch(a, as, NT_API_GRAPH_LAUNCH, 0x9000, 7),
                           {a, as * kNsPerTick, NT_API_LAUNCH_KERNEL, 0xf1, 30, kContext1},
                           launch(b, bs, NT_API_LAUNCH_KERNEL, 0xb1, 40000)});
  state.set_estimated_launches({static_cast<int>(b)});

  DiscoveryResult discovery;
  discovery.processes.push_back(
      {{static_cast<int>(a), as},
       "python3",
       "/usr/bin/python3",
       {{kContainer, "containerd", kPodUid}, {"ml", "trainer-0", "pytorch"}},
       {}});
  discovery.processes.push_back(
      {{static_cast<int>(b), bs}, "say \"hi\" \\", "/opt/x", {{"", "", "", "4242"}, {}}, {}});
  state.update_processes(discovery, [](const ProcessId &) { return true; });
  return state;
}

TracerHealth deterministic_health(std::uint64_t cuda_processes) {
  TracerHealth health;
  health.cuda_processes = cuda_processes;
  health.attached_libraries = 2;
  health.attached_probes = 118;
  health.missing_symbols = 4;
  health.attach_errors = 1;
  health.ring_buffer_drops = 17;
  health.malformed_events = 3;
  health.stacks_lost = 8;
  health.unreadable_processes = 9;
  health.fd_limit_scans = 2;
  return health;
}

std::string render(const std::vector<MetricFamily> &families) {
  std::ostringstream out;
  render_text(families, out);
  return out.str();
}

std::vector<MetricFamily> all_families(const CudaState &state) {
  auto families = tracer_families(deterministic_health(state.processes().size()));
  auto cuda = cuda_families(state);
  families.insert(families.end(), std::make_move_iterator(cuda.begin()),
                  std::make_move_iterator(cuda.end()));
  return families;
}

using test::family;
using test::label;

// Golden test. To regenerate after an intentional change, run the tests with
// NEUTRACER_UPDATE_GOLDEN=1; the file is then rewritten instead of compared. Review the diff and
// run `promtool check metrics < tests/fixtures/golden/cuda_metrics.prom` (it must print nothing).
TEST(CudaMetrics, MatchesGoldenFile) {
  const std::string path = NEUTRACER_FIXTURES_DIR "/golden/cuda_metrics.prom";
  const std::string rendered = render(all_families(deterministic_state()));

  neutracer::test::expect_matches_golden(path, rendered);
}

// The daemon writes these series straight into text: the same text, byte for byte.
TEST(CudaMetrics, TextWrittenStraightMatchesTheFamiliesRendered) {
  const auto state = deterministic_state();
  for (const bool histograms : {true, false}) {
    std::string straight;
    TextSink sink(straight);
    write_cuda_metrics(state, SeriesSettings{histograms}, sink);
    EXPECT_EQ(straight, render(cuda_families(state, SeriesSettings{histograms})));
    EXPECT_NE(straight.find("neutracer_cuda_kernel_launches_total{pid="), std::string::npos);
  }
}

TEST(CudaMetrics, EstimatedLaunchesAreNeverInTheExactFamily) {
  const auto families = cuda_families(deterministic_state(), SeriesSettings{false});
  const auto &exact = family(families, "neutracer_cuda_kernel_launches_total");
  const auto &estimated = family(families, "neutracer_cuda_kernel_launches_estimated_total");
  EXPECT_FALSE(exact.samples.empty());
  for (const auto &sample : exact.samples)
    EXPECT_NE(label(sample.labels, "pid"), "77");
  ASSERT_EQ(estimated.samples.size(), 1u);
  EXPECT_EQ(label(estimated.samples[0].labels, "pid"), "77");
  EXPECT_EQ(label(estimated.samples[0].labels, "kernel"), "decode");
  EXPECT_EQ(estimated.samples[0].value, 40000);
}

TEST(LaunchCountingMetrics, UnderTheExactDefaultARuledProcessShowsItsOwnShares) {
  // pid 77 is switched off by a rule and pid 1001 sampled; exact is the daemon's default.
  const std::vector<LaunchProcessView> views{
      {77, LaunchCounting::off, 0, 0}, {1001, LaunchCounting::adaptive, 0.25, 0.5, true, 0.03}};
  const auto families = launch_counting_families("exact", deterministic_state(), views, 1e-6);
  const auto share = [&](const std::string &name, const std::string &pid) {
    for (const auto &sample : family(families, name).samples)
      if (label(sample.labels, "pid") == pid)
        return sample.value;
    return -1.0;
  };
  EXPECT_EQ(share("neutracer_cuda_launch_sampling_ratio", "77"), 0);
  EXPECT_EQ(share("neutracer_cuda_launch_sampling_ratio", "1001"), 0.25);
  EXPECT_EQ(share("neutracer_cuda_launch_estimate_relative_error", "1001"), 0.03);
  EXPECT_EQ(share("neutracer_cuda_launch_estimate_relative_error", "77"), 0);
  // Without views (launch probes system-wide), exact mode counts every process.
  const auto system_wide = launch_counting_families("exact", deterministic_state(), {}, 0);
  for (const auto &sample : family(system_wide, "neutracer_cuda_launch_sampling_ratio").samples)
    EXPECT_EQ(sample.value, 1);
}

TEST(LaunchCountingMetrics, TextWrittenStraightMatchesTheFamiliesRendered) {
  const auto state = deterministic_state();
  const std::vector<LaunchProcessView> views{{1001, LaunchCounting::adaptive, 0.25, 0.5}};
  for (const std::string mode : {"exact", "adaptive"}) {
    std::string straight;
    TextSink sink(straight);
    write_launch_counting_metrics(mode, state, views, 2e-6, sink);
    EXPECT_EQ(straight, render(launch_counting_families(mode, state, views, 2e-6)));
    EXPECT_NE(straight.find(mode == "exact" ? "ratio{pid=\"1001\"" : "} 0.25\n"), std::string::npos)
        << straight;
  }
}

TEST(CudaMetrics, RenderingIsDeterministic) {
  EXPECT_EQ(render(all_families(deterministic_state())),
            render(all_families(deterministic_state())));
}

TEST(CudaMetrics, FamilyNamesAndTypes) {
  const auto families = all_families(deterministic_state());
  std::set<std::string> names;
  for (const auto &f : families) {
    EXPECT_TRUE(names.insert(f.name).second) << "duplicate family " << f.name;
    EXPECT_TRUE(f.name.starts_with("neutracer_")) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
    if (f.type == MetricType::counter)
      EXPECT_TRUE(f.name.ends_with("_total")) << f.name;
    else
      EXPECT_FALSE(f.name.ends_with("_total")) << f.name;
    if (f.type == MetricType::histogram)
      EXPECT_TRUE(f.samples.empty()) << f.name;
    else
      EXPECT_TRUE(f.histograms.empty()) << f.name;
  }
  EXPECT_EQ(family(families, "neutracer_cuda_sync_wait_duration_seconds").type,
            MetricType::histogram);
  EXPECT_EQ(family(families, "neutracer_cuda_memory_used_bytes").type, MetricType::gauge);
}

TEST(CudaMetrics, TracerFamilies) {
  const auto families = tracer_families(deterministic_health(3));
  EXPECT_EQ(family(families, "neutracer_cuda_processes").samples.at(0).value, 3.0);
  EXPECT_EQ(family(families, "neutracer_attached_probes").samples.at(0).value, 118.0);
  EXPECT_EQ(family(families, "neutracer_stacks_lost_total").samples.at(0).value, 8.0);
  EXPECT_EQ(family(families, "neutracer_scan_errors_total").samples.at(0).value, 2.0);
  const auto &dropped = family(families, "neutracer_events_dropped_total");
  ASSERT_EQ(dropped.samples.size(), 2u);
  EXPECT_EQ(label(dropped.samples[0].labels, "source"), "ring_buffer");
  EXPECT_EQ(dropped.samples[0].value, 17.0);
  EXPECT_EQ(label(dropped.samples[1].labels, "source"), "malformed");
  EXPECT_EQ(dropped.samples[1].value, 3.0);
  // Owned by other collectors: the loop, the call sites, the BPF maps.
  for (const auto *name : {"neutracer_build_info", "neutracer_scans_total", "neutracer_call_sites",
                           "neutracer_bpf_map_update_errors_total"})
    EXPECT_TRUE(std::none_of(families.begin(), families.end(),
                             [&](const MetricFamily &f) { return f.name == name; }))
        << name;
}

TEST(CudaMetrics, ProcessSeries) {
  const auto state = deterministic_state();
  const auto families = cuda_families(state);

  // The memory kinds each process used on each GPU, and always `device`, labelled pid/comm,
  // container/container_id/namespace/pod (1001) or slurm_job (77), gpu/kind: 1001 used all four
  // kinds on GPU 0 and device memory on GPU 1, 77 bound no context (gpu "unknown").
  const auto &used = family(families, "neutracer_cuda_memory_used_bytes");
  ASSERT_EQ(used.samples.size(), 6u);
  for (const auto &sample : used.samples) {
    const auto pid = label(sample.labels, "pid");
    ASSERT_TRUE(pid == "77" || pid == "1001") << pid;
    EXPECT_EQ(label(sample.labels, "container_id"), pid == "1001" ? kContainer : "<absent>");
    EXPECT_EQ(label(sample.labels, "container"), pid == "1001" ? "pytorch" : "<absent>");
    EXPECT_EQ(label(sample.labels, "pod"), pid == "1001" ? "trainer-0" : "<absent>");
    EXPECT_EQ(label(sample.labels, "slurm_job"), pid == "77" ? "4242" : "<absent>");
    const auto kind = label(sample.labels, "kind");
    const auto gpu = label(sample.labels, "gpu");
    double expected = 0;
    if (pid == "1001" && gpu == "0")
      expected = kind == "device"        ? 1 << 20
                 : kind == "managed"     ? 65536
                 : kind == "host_pinned" ? 8192
                                         : 2 << 20;
    else if (pid == "1001")
      expected = kind == "device" ? 3 << 20 : 0;
    else
      expected = kind == "device" ? 1536 : 0;
    EXPECT_EQ(gpu, pid == "1001" ? gpu : "unknown");
    EXPECT_EQ(sample.value, expected) << pid << " " << gpu << " " << kind;
  }

  const auto &launches = family(families, "neutracer_cuda_kernel_launches_total");
  std::map<std::string, double> by_kernel;
  for (const auto &sample : launches.samples)
    if (label(sample.labels, "pid") == "1001")
      by_kernel[label(sample.labels, "kernel") + "@" + label(sample.labels, "gpu")] = sample.value;
  EXPECT_EQ(by_kernel, (std::map<std::string, double>{{"vectorAdd_kernel@0", 120},
                                                      {"vectorAdd_kernel@1", 30},
                                                      {"gemm@0", 64},
                                                      {"[other]@0", 3},
                                                      {"[unresolved]@0", 5},
                                                      {"[cuda_graph]@0", 7}}));

  const auto &histogram = family(families, "neutracer_cuda_sync_wait_duration_seconds");
  ASSERT_EQ(histogram.histograms.size(), 3u);
  for (const auto &h : histogram.histograms) {
    EXPECT_EQ(h.upper_bounds.size(), kSyncWaitBuckets.size());
    EXPECT_EQ(h.bucket_counts.size(), kSyncWaitBuckets.size());
    if (label(h.labels, "api") == "cuStreamSynchronize") {
      EXPECT_EQ(h.count, 2u);
      EXPECT_DOUBLE_EQ(h.sum, 0.252);
    }
    if (label(h.labels, "api") == "cuCtxSynchronize") {
      EXPECT_EQ(h.count, 1u);
      std::uint64_t in_buckets = 0;
      for (const auto c : h.bucket_counts)
        in_buckets += c;
      EXPECT_EQ(in_buckets, 0u);
    }
  }

  const auto &in_progress = family(families, "neutracer_cuda_sync_in_progress_seconds");
  for (const auto &sample : in_progress.samples)
    EXPECT_EQ(sample.value, label(sample.labels, "api") == "cuStreamSynchronize" ? 0.5 : 0.0);

  const auto &errors = family(families, "neutracer_cuda_api_errors_total");
  std::set<std::pair<std::string, std::string>> error_labels;
  for (const auto &sample : errors.samples)
    error_labels.emplace(label(sample.labels, "api"), label(sample.labels, "error"));
  EXPECT_EQ(error_labels, (std::set<std::pair<std::string, std::string>>{
                              {"cuMemAlloc_v2", "CUDA_ERROR_OUT_OF_MEMORY"},
                              {"cuEventSynchronize", "CUDA_ERROR_INVALID_HANDLE"}}));
}

// Series that would only ever read 0 are left out (issue 19: 123 series for a process with 3
// kernels, 86 of them zero, before).
TEST(CudaMetrics, UnusedMemoryKindsAndCopyDirectionsHaveNoSeries) {
  const auto families = cuda_families(deterministic_state());
  std::set<std::string> kinds_of_77;
  for (const auto &sample : family(families, "neutracer_cuda_memory_allocations_total").samples)
    if (label(sample.labels, "pid") == "77")
      kinds_of_77.insert(label(sample.labels, "kind"));
  EXPECT_EQ(kinds_of_77, std::set<std::string>{"device"});
  // Copy directions: only those with calls, on the GPU they were made on and in the throughput.
  std::set<std::pair<std::string, std::string>> copied;
  for (const auto &sample : family(families, "neutracer_cuda_memcpy_calls_total").samples) {
    EXPECT_GT(sample.value, 0) << label(sample.labels, "direction");
    copied.emplace(label(sample.labels, "pid"), label(sample.labels, "direction"));
  }
  EXPECT_FALSE(copied.empty());
  std::set<std::pair<std::string, std::string>> smoothed;
  for (const auto &sample :
       family(families, "neutracer_cuda_memcpy_throughput_bytes_per_second").samples)
    smoothed.emplace(label(sample.labels, "pid"), label(sample.labels, "direction"));
  EXPECT_EQ(smoothed, copied);
}

TEST(CudaMetrics, ProcessHistogramsCanBeSwitchedOffKeepingTheirSums) {
  const auto families = cuda_families(deterministic_state(), SeriesSettings{false});
  EXPECT_TRUE(family(families, "neutracer_cuda_sync_wait_duration_seconds").histograms.empty());
  EXPECT_EQ(family(families, "neutracer_cuda_sync_wait_seconds_total").samples.size(), 3u);
  // The family keeps its HELP and TYPE, as every family does when empty.
  EXPECT_NE(render(families).find("# TYPE neutracer_cuda_sync_wait_duration_seconds histogram\n"),
            std::string::npos);
}

TEST(CudaMetrics, EmptyStateStillHasHelpAndType) {
  const CudaState state(CudaState::Settings{});
  const auto families = cuda_families(state);
  for (const auto &f : families) {
    EXPECT_TRUE(f.samples.empty()) << f.name;
    EXPECT_TRUE(f.histograms.empty()) << f.name;
  }
  const auto text = render(families);
  EXPECT_NE(text.find("# TYPE neutracer_cuda_kernel_launches_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE neutracer_cuda_sync_wait_duration_seconds histogram\n"),
            std::string::npos);
}

} // namespace
} // namespace neutracer
