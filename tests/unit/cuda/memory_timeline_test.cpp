// SPDX-License-Identifier: Apache-2.0
#include "cuda/memory_timeline.h"

#include <gtest/gtest.h>

#include "exporters/memory_timeline_page.h"

namespace neutracer {
namespace {

const ProcessId kId{42, 7};

MemoryChange alloc(std::uint64_t t, std::uint64_t address, std::uint64_t bytes) {
  return {t, MemoryChangeKind::allocation, address, bytes, 0, 0};
}
MemoryChange release(std::uint64_t t, std::uint64_t address) {
  return {t, MemoryChangeKind::free, address, 0, 0, 0};
}
MemoryChange failure(std::uint64_t t, std::uint64_t bytes) {
  return {t, MemoryChangeKind::failed_allocation, 0, bytes, 0, 2};
}

std::size_t count(const std::string &text, const std::string &what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

TEST(MemoryTimeline, RecordsLifetimesAndFailures) {
  MemoryTimeline timeline;
  const std::vector<MemoryChange> changes{alloc(10, 0x1000, 100), alloc(20, 0x2000, 50),
                                          release(30, 0x1000), failure(40, 1 << 30),
                                          release(50, 0xdead)}; // unknown: ignored
  timeline.record(kId, changes);
  const auto &t = timeline.processes().at(kId);
  ASSERT_EQ(t.blocks.size(), 2u);
  EXPECT_EQ(t.blocks[0].allocated_ns, 10u);
  EXPECT_EQ(t.blocks[0].freed_ns, 30u);
  EXPECT_EQ(t.blocks[1].freed_ns, 0u); // live
  ASSERT_EQ(t.failures.size(), 1u);
  EXPECT_EQ(t.failures[0].bytes, 1u << 30);
  timeline.forget(kId);
  EXPECT_TRUE(timeline.processes().empty());
}

TEST(MemoryTimeline, KeepsTheNewestBlocksWithinItsBound) {
  MemoryTimeline timeline(3, 2);
  std::vector<MemoryChange> changes;
  for (std::uint64_t i = 0; i < 5; ++i)
    changes.push_back(alloc(i, 0x1000 * (i + 1), 10));
  for (std::uint64_t i = 0; i < 3; ++i)
    changes.push_back(failure(10 + i, 99));
  changes.push_back(release(20, 0x5000)); // newest block, still tracked
  changes.push_back(release(21, 0x1000)); // oldest, forgotten: ignored
  timeline.record(kId, changes);
  const auto &t = timeline.processes().at(kId);
  ASSERT_EQ(t.blocks.size(), 3u);
  EXPECT_EQ(t.dropped_blocks, 2u);
  EXPECT_EQ(t.blocks.front().address, 0x3000u);
  EXPECT_EQ(t.blocks.back().freed_ns, 20u);
  ASSERT_EQ(t.failures.size(), 2u);
  EXPECT_EQ(t.failures.front().time_ns, 11u);
}

TEST(MemoryTimeline, AllProcessesTogetherStayWithinTheTotalBound) {
  MemoryTimeline timeline(/*max_blocks=*/100, /*max_failures=*/2, /*max_total_blocks=*/10);
  const ProcessId big{1, 1}, small{2, 2}, late{3, 3};
  std::vector<MemoryChange> changes;
  for (std::uint64_t i = 0; i < 8; ++i)
    changes.push_back(alloc(i, 0x1000 * (i + 1), 10));
  timeline.record(big, changes);
  timeline.record(small, std::vector<MemoryChange>{alloc(1, 0x1000, 10), alloc(2, 0x2000, 10)});
  EXPECT_EQ(timeline.total_blocks(), 10u);
  // Full: a newcomer's blocks are taken from the process holding the most.
  timeline.record(late, std::vector<MemoryChange>{alloc(9, 0x9000, 10), alloc(10, 0xa000, 10)});
  EXPECT_EQ(timeline.total_blocks(), 10u);
  EXPECT_EQ(timeline.processes().at(big).blocks.size(), 6u);
  EXPECT_EQ(timeline.processes().at(big).dropped_blocks, 2u);
  EXPECT_EQ(timeline.processes().at(big).blocks.front().address, 0x3000u);
  EXPECT_EQ(timeline.processes().at(small).blocks.size(), 2u);
  EXPECT_EQ(timeline.processes().at(late).blocks.size(), 2u);
  // A process that goes gives its share back.
  timeline.forget(big);
  EXPECT_EQ(timeline.total_blocks(), 4u);
  timeline.forget(small);
  timeline.forget(late);
  EXPECT_EQ(timeline.total_blocks(), 0u);
  EXPECT_TRUE(timeline.processes().empty());
}

TEST(MemoryTimeline, AnAddressReusedAfterItsOldBlockWasDroppedStaysTracked) {
  MemoryTimeline timeline(/*max_blocks=*/2);
  // 0x1000 is freed and allocated again; dropping its first block must not forget the second.
  timeline.record(kId, std::vector<MemoryChange>{alloc(1, 0x1000, 10), release(2, 0x1000),
                                                 alloc(3, 0x1000, 20), alloc(4, 0x2000, 10),
                                                 release(5, 0x1000)});
  const auto &t = timeline.processes().at(kId);
  ASSERT_EQ(t.blocks.size(), 2u);
  EXPECT_EQ(t.blocks.front().bytes, 20u);
  EXPECT_EQ(t.blocks.front().freed_ns, 5u);
}

TEST(MemoryTimelinePage, DrawsEveryBlockAndFailure) {
  MemoryTimeline timeline;
  const std::vector<MemoryChange> changes{alloc(1'000'000'000, 0x7f0000000000, 64 << 20),
                                          alloc(1'500'000'000, 0x7f0010000000, 32 << 20),
                                          release(2'000'000'000, 0x7f0000000000),
                                          failure(2'500'000'000, 1ull << 34)};
  timeline.record(kId, changes);
  // Monotonic 3 s is 2023-11-14 22:13:23 UTC: the first block came at 22:13:21.
  const ClockOffset clock{1'700'000'003.0, 3'000'000'000};
  const auto page = memory_timeline_page(kId, "train<1>", timeline.processes().at(kId), clock);
  EXPECT_NE(page.find("GPU memory of train&lt;1&gt; (pid 42)"), std::string::npos);
  EXPECT_EQ(count(page, "<rect class=\"live\""), 1u);
  EXPECT_EQ(count(page, "<rect class=\"freed\""), 1u);
  EXPECT_EQ(count(page, "<line class=\"failed\""), 1u);
  EXPECT_NE(page.find("failed allocation of 16.0 GiB at 22:13:22.500"), std::string::npos);
  EXPECT_NE(page.find("0x7f0000000000 64.0 MiB, allocated 22:13:21.000, freed 22:13:22.000 "
                      "(after 1.000 s)"),
            std::string::npos);
  EXPECT_NE(page.find("32.0 MiB, allocated 22:13:21.500, live (for 1.500 s)"), std::string::npos);
  // The time axis: wall-clock ticks over the 2 s shown, tenths of a second at this span.
  EXPECT_NE(page.find(">22:13:21.0</text>"), std::string::npos) << page;
  EXPECT_NE(page.find(">22:13:21.4</text>"), std::string::npos);
  EXPECT_NE(page.find(">22:13:23.0</text>"), std::string::npos);
  EXPECT_NE(page.find("time (UTC, 2023-11-14, 2.0 s shown)"), std::string::npos);
  // The timeline refreshes itself: one box to stop it, the part it replaces, the script.
  EXPECT_NE(page.find("<input type=\"checkbox\" id=\"follow\" checked> refresh every 5 s"),
            std::string::npos);
  EXPECT_EQ(count(page, "<div id=\"timeline\">"), 1u);
  EXPECT_NE(page.find("setInterval(refresh, 5000)"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos) << "nothing fetched but the page itself";
  EXPECT_NE(page.find("2 allocations recorded, 1 live (32.0 MiB), 1 failed allocations"),
            std::string::npos);
  // The bar of the freed block spans half of the 2 s window: 0 s to 1 s of [0 s, 2 s].
  EXPECT_NE(page.find("x=\"110.0\" y=\""), std::string::npos);
  EXPECT_NE(page.find("width=\"485.0\""), std::string::npos);

  const auto index = memory_timeline_index(timeline.processes(), {{kId, "train"}});
  EXPECT_NE(index.find("<a href=\"/memory?pid=42\">train (pid 42)</a>: 2 allocations"),
            std::string::npos);
}

TEST(MemoryTimelinePage, EmptyTimelineStillRenders) {
  const auto svg = memory_timeline_svg(ProcessTimeline{}, ClockOffset{1e9, 5});
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(count(svg, "<rect class="), 0u);
}

} // namespace
} // namespace neutracer
