// SPDX-License-Identifier: Apache-2.0
// CudaState: Kernel names joined to launch counts, the top-N cap per process, and the name bounds.
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

} // namespace
} // namespace neutracer
