// SPDX-License-Identifier: Apache-2.0
// Call sites: the stack from the call site outwards, and the per-process site table (counts,
// live bytes per site, limits).
#include "stacks/call_sites.h"

#include <gtest/gtest.h>

#include "stacks/call_site_stack.h"

namespace neutracer {
namespace {

TEST(CallSiteStack, AtReturnTheWalkStartsAtTheCallSite) {
  const std::vector<std::uint64_t> frames{0x10, 0x20, 0x30, 0, 0};
  const auto stack = call_site_stack(frames, StackCapture::at_return, 0, 5);
  EXPECT_EQ(stack.addresses, (std::vector<std::uint64_t>{0x10, 0x20, 0x30}));
  EXPECT_FALSE(stack.depth_limited);
}

TEST(CallSiteStack, AtEntryTheApiIsDroppedAndAMissingCallerInserted) {
  // Kernels without the uprobe fix-up: [api entry, caller's caller, ...].
  const std::vector<std::uint64_t> old_kernel{0xa0, 0x20, 0x30};
  EXPECT_EQ(call_site_stack(old_kernel, StackCapture::at_entry, 0x10, 8).addresses,
            (std::vector<std::uint64_t>{0x10, 0x20, 0x30}));
  // Kernels with it: [api entry, caller, caller's caller, ...]: nothing twice.
  const std::vector<std::uint64_t> new_kernel{0xa0, 0x10, 0x20, 0x30};
  EXPECT_EQ(call_site_stack(new_kernel, StackCapture::at_entry, 0x10, 8).addresses,
            (std::vector<std::uint64_t>{0x10, 0x20, 0x30}));
  // Unknown caller: what the walk found.
  EXPECT_EQ(call_site_stack(old_kernel, StackCapture::at_entry, 0, 8).addresses,
            (std::vector<std::uint64_t>{0x20, 0x30}));
}

TEST(CallSiteStack, AFullWalkIsDepthLimited) {
  const std::vector<std::uint64_t> frames{1, 2, 3, 4};
  EXPECT_TRUE(call_site_stack(frames, StackCapture::at_return, 0, 4).depth_limited);
  EXPECT_FALSE(call_site_stack(frames, StackCapture::at_return, 0, 5).depth_limited);
}

SymbolizedStack named(const std::string &function) {
  SymbolizedStack stack;
  Frame frame;
  frame.function = std::make_shared<const std::string>(function);
  frame.module = std::make_shared<const std::string>("/bin/app");
  stack.frames.push_back(frame);
  return stack;
}

class ProcessSitesTest : public ::testing::Test {
protected:
  SiteIndex site(const std::string &function, std::vector<std::uint64_t> addresses,
                 bool may_add = true) {
    return sites.site(CallSiteStack{std::move(addresses)}, may_add, [&] {
      ++symbolised;
      return named(function);
    });
  }
  CallSitesSettings settings;
  ProcessSites sites{settings};
  int symbolised = 0;
};

TEST_F(ProcessSitesTest, OneSitePerStackSymbolisedOnce) {
  const auto a = site("a", {1, 2});
  const auto b = site("b", {1, 3});
  EXPECT_NE(a, b);
  EXPECT_EQ(site("a", {1, 2}), a);
  EXPECT_EQ(symbolised, 2);
  EXPECT_EQ(sites.stack_sites(), 2u);
  EXPECT_EQ(*sites.sites()[a].stack->frames[0].function, "a");
}

TEST_F(ProcessSitesTest, LiveBytesFollowAllocationsAndFrees) {
  const auto leak = site("leak", {1});
  const auto temp = site("temp", {2});
  sites.allocation(leak, 0x1000, 100, false);
  sites.allocation(leak, 0x2000, 50, false);
  sites.allocation(temp, 0x3000, 70, false);
  sites.free(0x3000, false);
  sites.free(0x9999, false); // allocated before tracing: nothing to take back
  const auto &counts = sites.sites()[leak].counts;
  EXPECT_EQ(counts.allocations, 2u);
  EXPECT_EQ(counts.allocated_bytes, 150u);
  EXPECT_EQ(counts.live_allocations, 2u);
  EXPECT_EQ(counts.live_bytes, 150u);
  EXPECT_EQ(sites.sites()[temp].counts.live_bytes, 0u);
  EXPECT_EQ(sites.sites()[temp].counts.allocated_bytes, 70u);
  // A handle of cuMemCreate and a device pointer with the same value are different things.
  sites.allocation(temp, 0x1000, 8, true);
  sites.free(0x1000, true);
  EXPECT_EQ(sites.sites()[leak].counts.live_bytes, 150u);
  // An address handed out again retires the allocation whose free was missed.
  sites.allocation(temp, 0x2000, 10, false);
  EXPECT_EQ(sites.sites()[leak].counts.live_bytes, 100u);
  EXPECT_EQ(sites.sites()[temp].counts.live_bytes, 10u);
}

TEST_F(ProcessSitesTest, LeakSamplesCountPerSiteOfTheLiveBlock) {
  const auto leak = site("leak", {1});
  const auto other = site("other", {2});
  sites.allocation(leak, 0x1000, 100, false);
  sites.allocation(leak, 0x2000, 100, false);
  sites.allocation(other, 0x3000, 900, false);
  const std::vector<std::uint64_t> sampled{0x1000, 0x2000, 0x7777};
  sites.set_leak_samples(sampled);
  EXPECT_EQ(sites.sites()[leak].counts.leak_samples, 2u);
  // The leak's site is the one with samples, though another holds more bytes.
  EXPECT_EQ(sites.leak_sites(1), std::vector<SiteIndex>{leak});
  sites.set_leak_samples({});
  EXPECT_EQ(sites.leak_sites(1), std::vector<SiteIndex>{other});
}

TEST_F(ProcessSitesTest, LeakSitesRankSamplesThenLiveBytesAndSkipWhatHoldsNothing) {
  const auto few = site("few", {1});
  const auto many = site("many", {2});
  const auto big = site("big", {3});
  const auto freed = site("freed", {4});
  sites.allocation(few, 0x1000, 10, false);
  sites.allocation(many, 0x2000, 10, false);
  sites.allocation(many, 0x3000, 10, false);
  sites.allocation(big, 0x4000, 500, false);
  sites.allocation(freed, 0x5000, 900, false);
  sites.free(0x5000, false);
  const std::vector<std::uint64_t> sampled{0x1000, 0x2000, 0x3000};
  sites.set_leak_samples(sampled);
  EXPECT_EQ(sites.leak_sites(5), (std::vector<SiteIndex>{many, few, big}));
  EXPECT_EQ(sites.leak_sites(2), (std::vector<SiteIndex>{many, few}));
  EXPECT_TRUE(sites.leak_sites(0).empty());
  EXPECT_EQ(sites.leak_sites(1), std::vector<SiteIndex>{many});
}

TEST_F(ProcessSitesTest, FailureSiteIsFoundByTime) {
  const auto first = site("first", {1});
  const auto second = site("second", {2});
  EXPECT_EQ(sites.failure_site(0), std::nullopt);
  sites.failed_allocation(first, 1 << 20, 100);
  sites.failed_allocation(second, 1 << 30, 200);
  EXPECT_EQ(sites.failure_site(150), first);
  EXPECT_EQ(sites.failure_site(250), second);
  EXPECT_EQ(sites.failure_site(50), second); // before any: the last
  EXPECT_EQ(sites.sites()[second].counts.failed_bytes, 1u << 30);
}

TEST_F(ProcessSitesTest, PendingWaitsAndLaunchSamplesAreReplacedEachScan) {
  const auto wait = site("wait", {1});
  const auto launch = site("launch", {2});
  sites.set_pending_waits({{wait, {1, 75.0}}});
  sites.set_launch_samples({{launch, 12}});
  EXPECT_EQ(sites.wait_site(), wait);
  EXPECT_EQ(sites.sites()[wait].counts.longest_pending_seconds, 75.0);
  EXPECT_EQ(sites.sites()[launch].counts.launch_samples, 12u);
  const auto version = sites.version();
  sites.set_pending_waits({});
  sites.set_launch_samples({{launch, 12}});
  EXPECT_EQ(sites.wait_site(), std::nullopt);
  EXPECT_NE(sites.version(), version);
  const auto unchanged = sites.version();
  sites.set_launch_samples({{launch, 12}});
  EXPECT_EQ(sites.version(), unchanged) << "the same counts change nothing";
  sites.wait(wait, 0.5);
  EXPECT_EQ(sites.sites()[wait].counts.waits, 1u);
}

TEST_F(ProcessSitesTest, WaitingPythonFramesAreReplacedEachScan) {
  const auto wait = site("wait", {1});
  const auto other = site("other", {2});
  Frame frame;
  frame.kind = FrameKind::python;
  frame.function = std::make_shared<const std::string>("wait_for_gpu");
  frame.module = std::make_shared<const std::string>("train.py");
  frame.line = 42;
  sites.set_waiting_python({{wait, {frame}}});
  ASSERT_EQ(sites.sites()[wait].waiting_python.size(), 1u);
  EXPECT_EQ(sites.sites()[wait].waiting_python[0].line, 42u);
  EXPECT_TRUE(sites.sites()[other].waiting_python.empty());
  const auto version = sites.version();
  sites.set_waiting_python({{wait, {frame}}});
  EXPECT_EQ(sites.version(), version) << "the same frames change nothing";
  frame.line = 43; // the thread waits again, from the next line
  sites.set_waiting_python({{wait, {frame}}});
  EXPECT_NE(sites.version(), version);
  EXPECT_EQ(sites.sites()[wait].waiting_python[0].line, 43u);
  sites.set_waiting_python({});
  EXPECT_TRUE(sites.sites()[wait].waiting_python.empty()) << "the wait returned";
}

TEST_F(ProcessSitesTest, BeyondTheLimitCallsCountAtTheOverLimitSite) {
  const auto kept = site("kept", {1});
  const auto over = site("new", {2}, false);
  EXPECT_NE(kept, over);
  EXPECT_EQ(sites.sites()[over].kind, SiteKind::over_limit);
  EXPECT_EQ(sites.sites()[over].stack, nullptr);
  EXPECT_EQ(site("again", {3}, false), over);
  EXPECT_EQ(sites.stack_sites(), 1u);
  EXPECT_EQ(symbolised, 1);
  // An empty stack (the kernel stored none) has its own site.
  EXPECT_EQ(sites.sites()[site("none", {})].kind, SiteKind::no_stack);
}

TEST(CallSites, LimitsPerProcessAndInTotal) {
  CallSitesSettings settings;
  settings.max_sites_per_process = 2;
  settings.max_sites = 3;
  CallSites all(settings);
  auto &first = all.process({1, 1});
  auto &second = all.process({2, 2});
  const auto add = [&](ProcessSites &sites, std::uint64_t address) {
    return sites.site(CallSiteStack{{address}}, all.may_add(sites), [] { return named("f"); });
  };
  add(first, 1);
  add(first, 2);
  EXPECT_FALSE(all.may_add(first)); // its own limit
  EXPECT_EQ(first.sites()[add(first, 3)].kind, SiteKind::over_limit);
  add(second, 1);
  EXPECT_FALSE(all.may_add(second)); // the total
  EXPECT_EQ(all.total_stack_sites(), 3u);
  all.forget({1, 1});
  EXPECT_TRUE(all.may_add(second));
}

TEST(CallSites, LiveAllocationsPerProcessAreBounded) {
  CallSitesSettings settings;
  settings.max_live_allocations_per_process = 2;
  ProcessSites sites(settings);
  const auto index = sites.site(CallSiteStack{{1}}, true, [] { return named("f"); });
  for (std::uint64_t address = 1; address <= 5; ++address)
    sites.allocation(index, address * 0x1000, 10, false);
  EXPECT_EQ(sites.sites()[index].counts.live_allocations, 2u);
  EXPECT_EQ(sites.sites()[index].counts.allocations, 5u);
  EXPECT_EQ(sites.untracked_allocations(), 3u);
}

} // namespace
} // namespace neutracer
