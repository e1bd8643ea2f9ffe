// SPDX-License-Identifier: Apache-2.0
#include "allocator/torch_allocator_probes.h"

#include <gtest/gtest.h>

#include <string>

namespace neutracer {
namespace {

UsdtProbe probe(const std::string &provider, const std::string &name,
                const std::string &arguments) {
  UsdtProbe probe;
  probe.provider = provider;
  probe.name = name;
  probe.arguments = arguments;
  return probe;
}

const std::string kMallocArguments = "8@%rax -1@%sil 8@%rdi -8@%rdx";

TEST(TorchAllocatorProbes, UsableWithOneMallocAndTwoFreeSites) {
  UsdtNotes notes;
  notes.probes = {probe("pytorch", "malloc", kMallocArguments), probe("pytorch", "free", "8@%rbx"),
                  probe("pytorch", "free", "8@%r12")};
  const TorchAllocatorProbes found = find_torch_allocator_probes(notes);
  EXPECT_TRUE(found.usable);
  EXPECT_EQ(found.malloc_sites, 1u);
  EXPECT_EQ(found.free_sites, 2u);
  EXPECT_TRUE(found.reason.empty()) << found.reason;
}

TEST(TorchAllocatorProbes, NoPytorchProbesSaysSo) {
  UsdtNotes notes;
  notes.probes = {probe("libc", "setjmp", "8@%rdi -4@%esi"),
                  probe("other", "malloc", kMallocArguments)};
  const TorchAllocatorProbes found = find_torch_allocator_probes(notes);
  EXPECT_FALSE(found.usable);
  EXPECT_EQ(found.malloc_sites, 0u);
  EXPECT_EQ(found.free_sites, 0u);
  EXPECT_EQ(found.reason,
            "no pytorch:malloc/pytorch:free static tracepoints (PyTorch built without them?)");
}

TEST(TorchAllocatorProbes, MalformedNotesAreMentionedWhenNothingWasFound) {
  UsdtNotes notes;
  notes.malformed = 2;
  const TorchAllocatorProbes found = find_torch_allocator_probes(notes);
  EXPECT_FALSE(found.usable);
  EXPECT_NE(found.reason.find("2 malformed stapsdt notes"), std::string::npos) << found.reason;
}

TEST(TorchAllocatorProbes, NamesTheMissingFreeProbe) {
  UsdtNotes notes;
  notes.probes = {probe("pytorch", "malloc", kMallocArguments)};
  const TorchAllocatorProbes found = find_torch_allocator_probes(notes);
  EXPECT_FALSE(found.usable);
  EXPECT_EQ(found.malloc_sites, 1u);
  EXPECT_EQ(found.reason, "no pytorch:free static tracepoint");
}

TEST(TorchAllocatorProbes, NamesTheMissingMallocProbe) {
  UsdtNotes notes;
  notes.probes = {probe("pytorch", "free", "8@%rdi")};
  const TorchAllocatorProbes found = find_torch_allocator_probes(notes);
  EXPECT_FALSE(found.usable);
  EXPECT_EQ(found.free_sites, 1u);
  EXPECT_EQ(found.reason, "no pytorch:malloc static tracepoint");
}

TEST(TorchAllocatorProbes, AnUnexpectedArgumentCountIsNotUsable) {
  UsdtNotes notes;
  notes.probes = {probe("pytorch", "malloc", "8@%rax -1@%sil 8@%rdi"),
                  probe("pytorch", "free", "8@%rdi")};
  const TorchAllocatorProbes found = find_torch_allocator_probes(notes);
  EXPECT_FALSE(found.usable);
  EXPECT_EQ(found.malloc_sites, 0u);
  EXPECT_EQ(found.free_sites, 1u);
  EXPECT_EQ(found.reason, "pytorch:malloc has 3 arguments, expected 4");
}

TEST(TorchAllocatorProbes, BothProblemsAreReported) {
  UsdtNotes notes;
  notes.probes = {probe("pytorch", "malloc", kMallocArguments + " 8@%rcx")};
  const TorchAllocatorProbes found = find_torch_allocator_probes(notes);
  EXPECT_FALSE(found.usable);
  EXPECT_EQ(found.reason,
            "pytorch:malloc has 5 arguments, expected 4; no pytorch:free static tracepoint");
}

TEST(TorchAllocatorProbes, ASiteWithTheRightCountSufficesBesideAWrongOne) {
  UsdtNotes notes;
  notes.probes = {probe("pytorch", "malloc", kMallocArguments), probe("pytorch", "free", ""),
                  probe("pytorch", "free", "8@%rdi")};
  const TorchAllocatorProbes found = find_torch_allocator_probes(notes);
  EXPECT_TRUE(found.usable) << found.reason;
  EXPECT_EQ(found.free_sites, 1u);
}

TEST(TorchAllocatorProbes, AnUnreadableFileGivesItsError) {
  UsdtNotes notes;
  notes.error = "cannot open /x/libc10_cuda.so: No such file or directory";
  const TorchAllocatorProbes found = find_torch_allocator_probes(notes);
  EXPECT_FALSE(found.usable);
  EXPECT_EQ(found.reason, notes.error);
}

TEST(TorchAllocatorProbes, TheStandInTorchLibraryIsUsable) {
  const TorchAllocatorProbes found =
      find_torch_allocator_probes(read_usdt_notes(NEUTRACER_STANDIN_C10_CUDA));
  EXPECT_TRUE(found.usable) << found.reason;
  EXPECT_EQ(found.malloc_sites, 1u);
  EXPECT_EQ(found.free_sites, 1u);
}

TEST(TorchAllocatorProbes, TheStandInCudaDriverIsNotUsable) {
  const TorchAllocatorProbes found =
      find_torch_allocator_probes(read_usdt_notes(NEUTRACER_STANDIN_LIBRARY));
  EXPECT_FALSE(found.usable);
  EXPECT_NE(found.reason.find("PyTorch built without them?"), std::string::npos) << found.reason;
}

TEST(TorchAllocatorProbes, RecognisesTheTorchCudaLibraryByFileName) {
  EXPECT_TRUE(
      is_torch_cuda_library("/opt/venv/lib/python3.11/site-packages/torch/lib/libc10_cuda.so"));
  EXPECT_TRUE(is_torch_cuda_library("libc10_cuda.so"));
  EXPECT_TRUE(is_torch_cuda_library(NEUTRACER_STANDIN_C10_CUDA));
  EXPECT_FALSE(is_torch_cuda_library("/opt/torch/lib/libc10_cuda.so (deleted)"));
  EXPECT_FALSE(is_torch_cuda_library("/opt/torch/lib/libc10.so"));
  EXPECT_FALSE(is_torch_cuda_library("/opt/torch/lib/libc10_cuda.so.2"));
  EXPECT_FALSE(is_torch_cuda_library("/opt/torch/lib/mylibc10_cuda.so"));
  EXPECT_FALSE(is_torch_cuda_library("/opt/libc10_cuda.so/libtorch.so"));
  EXPECT_FALSE(is_torch_cuda_library(""));
}

} // namespace
} // namespace neutracer
