// SPDX-License-Identifier: Apache-2.0
#include "cuda/library_attacher.h"

#include <gtest/gtest.h>

#include "fake_cuda_tracing.h"

namespace neutracer {
namespace {

DiscoveryResult mapping(const LibraryId &id) {
  DiscoveryResult discovery;
  CudaLibrary library;
  library.id = id;
  library.path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
  library.open_path = library.path;
  discovery.libraries.push_back(library);
  CudaProcess process;
  process.id = ProcessId{100, 1};
  process.libraries = {id};
  discovery.processes.push_back(process);
  return discovery;
}

TEST(LibraryAttacher, AFailedAttachIsTriedAgainLessAndLessOften) {
  test::FakeTracing tracer;
  tracer.attach_error = "no symbol table";
  LibraryAttacher attacher(tracer);
  const auto discovery = mapping(LibraryId{1, 42});
  std::vector<int> tried_at;
  for (int scan = 1; scan <= 40; ++scan) {
    const int before = tracer.attach_calls;
    attacher.update(discovery);
    if (tracer.attach_calls != before)
      tried_at.push_back(scan);
  }
  // Then after 1, 2, 4, 8 and 16 scans: not every scan, and not given up.
  EXPECT_EQ(tried_at, (std::vector<int>{1, 2, 4, 8, 16, 32}));
  EXPECT_EQ(attacher.counts().errors, tried_at.size());
  tracer.attach_error.clear();
  for (int scan = 41; scan <= 120 && !tracer.is_attached(LibraryId{1, 42}); ++scan)
    attacher.update(discovery);
  EXPECT_TRUE(tracer.is_attached(LibraryId{1, 42})) << "a fixed library is attached in the end";
}

TEST(LibraryAttacher, ALibraryMappedAgainAfterAFailureIsTriedAtOnce) {
  test::FakeTracing tracer;
  tracer.attach_error = "no symbol table";
  LibraryAttacher attacher(tracer);
  const auto discovery = mapping(LibraryId{1, 42});
  for (int scan = 0; scan < 5; ++scan)
    attacher.update(discovery);
  const int tries = tracer.attach_calls;
  attacher.update(DiscoveryResult{}); // no process maps it any more: its failure is forgotten
  tracer.attach_error.clear();
  attacher.update(discovery);
  EXPECT_EQ(tracer.attach_calls, tries + 1);
  EXPECT_TRUE(tracer.is_attached(LibraryId{1, 42}));
}

} // namespace
} // namespace neutracer
