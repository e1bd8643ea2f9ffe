// SPDX-License-Identifier: Apache-2.0
// SiteRecorder: stack ids of events, waits in progress and launch samples become call sites of
// this test process, named from the fixture library it loads; unused ids leave the stack map.
#include "stacks/site_recorder.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include "cuda/cuda_discovery.h"
#include "tests/unit/call_event.h"

namespace neutracer {
namespace {

class FakeStackMap : public StackMap {
public:
  std::uint32_t stack_depth() const override { return depth; }
  std::optional<std::vector<std::uint64_t>> read_stack(std::int32_t id) const override {
    ++reads;
    const auto it = stacks.find(id);
    return it == stacks.end() ? std::nullopt : std::optional(it->second);
  }
  std::vector<std::int32_t> stack_ids() const override {
    std::vector<std::int32_t> ids;
    for (const auto &[id, frames] : stacks)
      ids.push_back(id);
    return ids;
  }
  void delete_stacks(const std::vector<std::int32_t> &ids) override {
    for (const auto id : ids) {
      stacks.erase(id);
      deleted.push_back(id);
    }
  }
  std::vector<LaunchStackCount> read_launch_stacks() const override { return {}; }
  void delete_launch_stacks(const std::vector<LaunchStackCount> &) override {}
  std::optional<nt_python_stack> read_python_stack(std::uint64_t key) const override {
    ++python_reads;
    const auto it = python_stacks.find(key);
    return it == python_stacks.end() ? std::nullopt : std::optional(it->second);
  }
  void delete_python_stack(std::uint64_t key) override {
    python_stacks.erase(key);
    python_deleted.push_back(key);
  }
  bool set_python_process(std::uint32_t tgid, const nt_python_offsets &offsets) override {
    python_processes[tgid] = offsets;
    return true;
  }
  void forget_python_process(std::uint32_t tgid) override { python_processes.erase(tgid); }

  std::uint32_t depth = 16;
  std::map<std::uint64_t, nt_python_stack> python_stacks;
  std::map<std::uint32_t, nt_python_offsets> python_processes;
  std::map<std::int32_t, std::vector<std::uint64_t>> stacks;
  std::vector<std::int32_t> deleted;
  mutable int reads = 0;
  mutable int python_reads = 0;
  std::vector<std::uint64_t> python_deleted;
};

class SiteRecorderTest : public ::testing::Test {
protected:
  void SetUp() override {
    library_ = dlopen(NEUTRACER_SYMBOLS_FIXTURE, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(library_, nullptr) << dlerror();
    work_item_ = reinterpret_cast<std::uint64_t>(dlsym(library_, "_ZN7fixture9work_itemEi"));
    plain_ = reinterpret_cast<std::uint64_t>(dlsym(library_, "fixture_plain"));
    self_ = {static_cast<int>(::getpid()), process_start_ticks(procfs_, ::getpid()).value_or(0)};
    map_.stacks[7] = {work_item_ + 5, plain_ + 9}; // taken at an allocation's return
    map_.stacks[8] = {0xdead, plain_ + 9};         // taken at a sync's entry: [api, ...]
  }
  void TearDown() override {
    if (library_)
      dlclose(library_);
  }

  nt_call_event allocation(std::uint64_t address, std::uint64_t bytes, std::int32_t stack,
                           std::uint32_t result = 0) {
    auto event = test::call_event(NT_API_MEM_ALLOC, static_cast<std::uint32_t>(self_.pid), 0,
                                  {0, bytes}, {result == 0 ? address : 0}, result);
    event.stack_id = stack;
    event.exit_ns = 1000;
    return event;
  }
  ProcessId process_of(std::uint32_t, std::uint64_t) const { return self_; }

  ProcFs procfs_{"/proc"};
  FakeStackMap map_;
  void *library_ = nullptr;
  std::uint64_t work_item_ = 0, plain_ = 0;
  ProcessId self_;
};

TEST_F(SiteRecorderTest, AllocationsAndFailuresLandAtTheirNamedSite) {
  SiteRecorder recorder(map_, procfs_);
  recorder.record(self_, allocation(0x1000, 4096, 7));
  recorder.record(self_, allocation(0x2000, 4096, 7));
  recorder.record(self_, allocation(0, 1 << 30, 7, 2)); // out of memory
  auto free = test::call_event(NT_API_MEM_FREE, static_cast<std::uint32_t>(self_.pid), 0, {0x1000});
  recorder.record(self_, free);
  const auto *sites = recorder.sites().find(self_);
  ASSERT_NE(sites, nullptr);
  ASSERT_EQ(sites->stack_sites(), 1u);
  const Site &site = sites->sites().at(0);
  ASSERT_TRUE(site.stack);
  EXPECT_EQ(*site.stack->frames.at(0).function, "fixture::work_item(int)");
  EXPECT_EQ(*site.stack->frames.at(1).function, "fixture_plain");
  EXPECT_EQ(site.counts.allocations, 2u);
  EXPECT_EQ(site.counts.live_bytes, 4096u);
  EXPECT_EQ(site.counts.failed_allocations, 1u);
  EXPECT_EQ(site.counts.failed_bytes, 1u << 30);
  EXPECT_EQ(map_.reads, 1) << "an id's frames are read once";
  EXPECT_EQ(recorder.site_for(self_, SitePurpose::failure, 2000), &site);
  EXPECT_EQ(recorder.leak_sites(self_, 1), std::vector<const Site *>{&site});
}

TEST_F(SiteRecorderTest, OneNativeStackFromTwoPythonLinesIsTwoSites) {
  SiteRecorder recorder(map_, procfs_);
  auto from_line_a = allocation(0x1000, 4096, 7);
  from_line_a.python_stack = 0xa;
  auto from_line_b = allocation(0x2000, 4096, 7);
  from_line_b.python_stack = 0xb;
  recorder.record(self_, from_line_a);
  recorder.record(self_, from_line_b);
  recorder.record(self_, allocation(0x3000, 4096, 7)); // no Python stack
  auto again_a = allocation(0x4000, 4096, 7);
  again_a.python_stack = 0xa;
  recorder.record(self_, again_a);
  const auto *sites = recorder.sites().find(self_);
  ASSERT_NE(sites, nullptr);
  ASSERT_EQ(sites->stack_sites(), 3u);
  EXPECT_EQ(sites->sites().at(0).counts.allocations, 2u) << "line a, twice";
  // This test process runs no CPython: the site keeps its native frames.
  EXPECT_EQ(*sites->sites().at(0).stack->frames.at(0).function, "fixture::work_item(int)");
  // The memory timeline finds each allocation's own site by both keys.
  EXPECT_EQ(recorder.allocation_site(self_, 7, 0xa), 0);
  EXPECT_EQ(recorder.allocation_site(self_, 7, 0xb), 1);
  EXPECT_EQ(recorder.allocation_site(self_, 7, 0), 2);
  EXPECT_EQ(recorder.allocation_site(self_, 7, 0xc), -1) << "a stack never recorded";
}

TEST_F(SiteRecorderTest, ASiteWhosePythonFramesWereLostTriesAgainOncePerScan) {
  SiteRecorder recorder(map_, procfs_);
  const auto from_python = [&](std::uint64_t address) {
    auto call = allocation(address, 4096, 7);
    call.python_stack = 0xa; // not in the map: evicted before the daemon read it
    return call;
  };
  recorder.record(self_, from_python(0x1000));
  EXPECT_EQ(map_.python_reads, 1);
  const auto *sites = recorder.sites().find(self_);
  ASSERT_NE(sites, nullptr);
  ASSERT_TRUE(sites->sites().at(0).stack);
  EXPECT_TRUE(sites->sites().at(0).stack->python_lost);
  recorder.record(self_, from_python(0x2000));
  EXPECT_EQ(map_.python_reads, 1) << "not again in the scan that named it";
  recorder.end_scan();
  recorder.record(self_, from_python(0x3000));
  recorder.record(self_, from_python(0x4000));
  EXPECT_EQ(map_.python_reads, 2) << "once in the next scan";
  EXPECT_EQ(sites->stack_sites(), 1u);
  EXPECT_EQ(sites->sites().at(0).counts.allocations, 4u);
  // A stack without Python frames never asks.
  recorder.end_scan();
  recorder.record(self_, allocation(0x5000, 4096, 7));
  recorder.record(self_, allocation(0x6000, 4096, 7));
  EXPECT_EQ(map_.python_reads, 2);
}

TEST_F(SiteRecorderTest, APythonStackThatDoesNotMatchItsKeyIsDeleted) {
  nt_python_stack stack{};
  stack.depth = 2;
  stack.frames[0] = {0x1000, 0x10};
  stack.frames[1] = {0x2000, 0x20};
  const auto tgid = static_cast<std::uint32_t>(self_.pid);
  const auto right = nt_python_stack_key(tgid, &stack);
  map_.python_stacks[right] = stack;
  auto other = stack;
  other.frames[1].instr = 0x24; // what a preempted probe could store under `wrong`
  const auto wrong = nt_python_stack_key(tgid, &stack) ^ 0x5;
  map_.python_stacks[wrong] = other;
  SiteRecorder recorder(map_, procfs_);
  auto matching = allocation(0x1000, 4096, 7);
  matching.python_stack = right;
  auto mismatched = allocation(0x2000, 4096, 7);
  mismatched.python_stack = wrong;
  recorder.record(self_, matching);
  recorder.record(self_, mismatched);
  EXPECT_EQ(map_.python_deleted, std::vector<std::uint64_t>{wrong});
  EXPECT_EQ(recorder.python_stacks_rejected(), 1u);
  EXPECT_TRUE(map_.python_stacks.contains(right));
}

TEST(PythonStackKey, NamesTheProcessAndEveryFrame) {
  nt_python_stack stack{};
  stack.depth = 2;
  stack.frames[0] = {0x1000, 0x10};
  stack.frames[1] = {0x2000, 0x20};
  stack.frames[2] = {0x3000, 0x30}; // beyond depth: not part of the stack
  const auto key = nt_python_stack_key(42, &stack);
  EXPECT_NE(key, 0u);
  EXPECT_NE(nt_python_stack_key(43, &stack), key);
  auto moved = stack;
  moved.frames[1].instr += 2;
  EXPECT_NE(nt_python_stack_key(42, &moved), key);
  auto beyond = stack;
  beyond.frames[2].code = 0x9999;
  EXPECT_EQ(nt_python_stack_key(42, &beyond), key);
  auto truncated = stack;
  truncated.status = NT_PYTHON_TRUNCATED;
  EXPECT_NE(nt_python_stack_key(42, &truncated), key);
}

TEST_F(SiteRecorderTest, OnlyAProcessRunningCPythonIsGivenToTheKernelSide) {
  SiteRecorder recorder(map_, procfs_);
  recorder.update_python_processes({self_});
  EXPECT_TRUE(map_.python_processes.empty()) << "this test program is not Python";
  recorder.forget(self_);
  EXPECT_TRUE(map_.python_processes.empty());
}

TEST_F(SiteRecorderTest, AStackTheKernelDidNotStoreCountsAtNoStack) {
  SiteRecorder recorder(map_, procfs_);
  recorder.record(self_, allocation(0x1000, 64, NT_NO_STACK));
  recorder.record(self_, allocation(0x2000, 64, 99)); // an id the map no longer holds
  const auto *sites = recorder.sites().find(self_);
  ASSERT_NE(sites, nullptr);
  ASSERT_EQ(sites->sites().size(), 1u);
  EXPECT_EQ(sites->sites()[0].kind, SiteKind::no_stack);
  EXPECT_EQ(sites->sites()[0].counts.live_bytes, 128u);
}

TEST_F(SiteRecorderTest, SyncStacksAreTakenAtEntry) {
  SiteRecorder recorder(map_, procfs_);
  // A wait in progress: its site is named while it waits.
  InflightCall call{static_cast<std::uint32_t>(self_.pid),
                    1,
                    0,
                    NT_API_STREAM_SYNCHRONIZE,
                    1'000'000'000,
                    8,
                    work_item_ + 5};
  recorder.set_inflight({call}, 91'000'000'000,
                        [this](std::uint32_t t, std::uint64_t s) { return process_of(t, s); });
  const Site *waiting = recorder.site_for(self_, SitePurpose::wait, 0);
  ASSERT_NE(waiting, nullptr);
  ASSERT_EQ(waiting->stack->frames.size(), 2u) << "the API's own frame is dropped";
  EXPECT_EQ(*waiting->stack->frames[0].function, "fixture::work_item(int)");
  EXPECT_EQ(waiting->counts.pending_waits, 1u);
  EXPECT_DOUBLE_EQ(waiting->counts.longest_pending_seconds, 90.0);
  // It returned: a wait counted at the same site, none pending.
  auto done =
      test::call_event(NT_API_STREAM_SYNCHRONIZE, static_cast<std::uint32_t>(self_.pid), 0, {0});
  done.stack_id = 8;
  done.caller = work_item_ + 5;
  done.enter_ns = 1'000'000'000;
  done.exit_ns = 3'000'000'000;
  recorder.record(self_, done);
  recorder.set_inflight({}, 92'000'000'000,
                        [this](std::uint32_t t, std::uint64_t s) { return process_of(t, s); });
  const auto &site = recorder.sites().find(self_)->sites().at(0);
  EXPECT_EQ(site.counts.waits, 1u);
  EXPECT_DOUBLE_EQ(site.counts.wait_seconds, 2.0);
  EXPECT_EQ(site.counts.pending_waits, 0u);
  EXPECT_EQ(recorder.site_for(self_, SitePurpose::wait, 0), nullptr);
}

// An NCCL collective's stack is taken at its entry: the site starts at its caller, and the
// allocator view's blocks, which fill only half the budget, leave room for it.
TEST_F(SiteRecorderTest, EntrySitesStartAtTheCallerAndMayUseTheWholeBudget) {
  SiteRecorderSettings settings;
  settings.sites.max_sites_per_process = 2;
  SiteRecorder recorder(map_, procfs_, settings);
  map_.stacks[9] = {plain_ + 9};
  ASSERT_GE(recorder.block_site(self_, 9, 0), 0);
  const Site *over = recorder.site(self_, recorder.block_site(self_, 7, 0));
  ASSERT_NE(over, nullptr);
  EXPECT_EQ(over->kind, SiteKind::over_limit) << "blocks keep to half the budget";
  const auto index = recorder.entry_site(self_, 8, work_item_ + 5, 0);
  const Site *site = recorder.site(self_, index);
  ASSERT_NE(site, nullptr);
  ASSERT_EQ(site->kind, SiteKind::stack);
  ASSERT_EQ(site->stack->frames.size(), 2u) << "the API's own frame is dropped";
  EXPECT_EQ(*site->stack->frames[0].function, "fixture::work_item(int)");
  EXPECT_EQ(*site->stack->frames[1].function, "fixture_plain");
}

TEST_F(SiteRecorderTest, LaunchSamplesSumPerSite) {
  SiteRecorder recorder(map_, procfs_);
  const auto pid = static_cast<std::uint32_t>(self_.pid);
  recorder.set_launch_stacks({{pid, 0, 8, work_item_ + 5, 3}, {pid, 0, 8, 0, 2}},
                             [this](std::uint32_t t, std::uint64_t s) { return process_of(t, s); });
  const auto *sites = recorder.sites().find(self_);
  ASSERT_NE(sites, nullptr);
  // With the caller and without: two stacks, two sites.
  ASSERT_EQ(sites->stack_sites(), 2u);
  std::uint64_t total = 0;
  for (const auto &site : sites->sites())
    total += site.counts.launch_samples;
  EXPECT_EQ(total, 5u);
}

TEST_F(SiteRecorderTest, UnusedIdsLeaveTheMapReferencedOnesStay) {
  SiteRecorderSettings settings;
  settings.collect_every_scans = 1;
  settings.keep_unused_scans = 2;
  SiteRecorder recorder(map_, procfs_, settings);
  map_.stacks[9] = {plain_ + 9}; // never referenced by anything
  recorder.record(self_, allocation(0x1000, 64, 7));
  const auto pid = static_cast<std::uint32_t>(self_.pid);
  const auto process_of = [this](std::uint32_t t, std::uint64_t s) {
    return this->process_of(t, s);
  };
  recorder.set_inflight({{pid, 1, 0, NT_API_STREAM_SYNCHRONIZE, 0, 8, 0}}, 10, process_of);
  recorder.end_scan();
  EXPECT_EQ(map_.deleted, std::vector<std::int32_t>{9});
  for (int scan = 0; scan < 4; ++scan) {
    recorder.set_inflight({{pid, 1, 0, NT_API_STREAM_SYNCHRONIZE, 0, 8, 0}}, 10, process_of);
    recorder.end_scan();
  }
  // 7 went unused for longer than two scans; 8 is a wait in progress.
  EXPECT_EQ(map_.deleted, (std::vector<std::int32_t>{9, 7}));
  EXPECT_TRUE(map_.stacks.contains(8));
  // The site made from 7 stays: sites outlive the ids they were read from.
  EXPECT_EQ(recorder.sites().find(self_)->sites().at(0).counts.live_bytes, 64u);
}

TEST_F(SiteRecorderTest, ViewsAreRebuiltOnlyWhenSitesChange) {
  SiteRecorder recorder(map_, procfs_);
  recorder.record(self_, allocation(0x1000, 64, 7));
  const auto first = recorder.views().at(self_);
  EXPECT_EQ(recorder.views().at(self_), first);
  recorder.record(self_, allocation(0x2000, 64, 7));
  const auto second = recorder.views().at(self_);
  EXPECT_NE(second, first);
  EXPECT_EQ(second->sites.at(0).counts.live_bytes, 128u);
  EXPECT_EQ(first->sites.at(0).counts.live_bytes, 64u) << "a published copy never changes";
  recorder.forget(self_);
  EXPECT_TRUE(recorder.views().empty());
}

TEST_F(SiteRecorderTest, StacksOffRecordsNothing) {
  map_.depth = 0;
  SiteRecorder recorder(map_, procfs_);
  EXPECT_FALSE(recorder.enabled());
  recorder.record(self_, allocation(0x1000, 64, 7));
  EXPECT_EQ(recorder.sites().find(self_), nullptr);
}

} // namespace
} // namespace neutracer
