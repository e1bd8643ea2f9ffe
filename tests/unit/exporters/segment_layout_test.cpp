// SPDX-License-Identifier: Apache-2.0
// The blocks inside segments on the memory page and in /api/v1/memory.
#include "exporters/segment_layout.h"

#include <gtest/gtest.h>

#include "exporters/memory_timeline_json.h"
#include "exporters/memory_timeline_page.h"

namespace neutracer {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
const ProcessId kId{42, 7};

std::size_t count(const std::string &text, const std::string &what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

// Two live segments of 20 and 2 MiB, and one freed: its blocks are not drawn.
ProcessTimeline timeline() {
  ProcessTimeline timeline;
  timeline.blocks = {
      {.address = 0x7f0000000000, .bytes = 20 * kMiB, .allocated_ns = 1, .freed_ns = 0, .site = -1},
      {.address = 0x7f1000000000, .bytes = 2 * kMiB, .allocated_ns = 2, .freed_ns = 0, .site = -1},
      {.address = 0x7f2000000000, .bytes = 4 * kMiB, .allocated_ns = 3, .freed_ns = 4, .site = -1}};
  return timeline;
}

AllocatorViewSummary open_view() {
  AllocatorViewSummary view;
  view.open = true;
  view.blocks = {
      {.address = 0x7f0000000000, .bytes = 4 * kMiB, .site = 0, .live = true, .time_ns = 0},
      {.address = 0x7f0000400000, .bytes = 2 * kMiB, .site = 0, .live = false, .time_ns = 0},
      {.address = 0x7f1000000000, .bytes = kMiB, .site = 1, .live = true, .time_ns = 0},
      {.address = 0x7f2000000000, .bytes = kMiB, .site = 1, .live = true, .time_ns = 0}};
  return view;
}

TEST(SegmentLayout, LiveSegmentsHoldTheirBlocks) {
  const auto layout = segment_layout(timeline(), open_view());
  ASSERT_EQ(layout.size(), 2u) << "the freed segment is gone";
  EXPECT_EQ(layout[0].live_bytes, 4 * kMiB);
  EXPECT_EQ(layout[0].cached_bytes, 2 * kMiB);
  EXPECT_EQ(layout[1].live_bytes, kMiB);
}

TEST(SegmentLayout, JsonGivesOffsetsAndStates) {
  const auto document = segment_layout_json(timeline(), open_view());
  ASSERT_EQ(document["segments"].size(), 2u);
  const auto &first = document["segments"][0];
  EXPECT_EQ(first["bytes"], 20 * kMiB);
  EXPECT_EQ(first["unseen_bytes"], 14 * kMiB);
  ASSERT_EQ(first["blocks"].size(), 2u);
  EXPECT_EQ(first["blocks"][1]["offset"], 4 * kMiB);
  EXPECT_EQ(first["blocks"][1]["state"], "cached");
  EXPECT_EQ(first["blocks"][1]["site"], 0);
}

TEST(SegmentLayout, TheMemoryDocumentHasItOnlyWhileTheViewIsOpen) {
  const ClockOffset clock{1700000000.0, 10};
  auto view = open_view();
  auto document =
      nlohmann::json::parse(memory_timeline_json(kId, "train", timeline(), clock, &view));
  EXPECT_EQ(document["allocator_view"]["segments"].size(), 2u);
  view.open = false;
  document = nlohmann::json::parse(memory_timeline_json(kId, "train", timeline(), clock, &view));
  EXPECT_FALSE(document.contains("allocator_view"));
  document = nlohmann::json::parse(memory_timeline_json(kId, "train", timeline(), clock));
  EXPECT_FALSE(document.contains("allocator_view"));
}

TEST(SegmentLayout, ThePageDrawsABarPerSegmentAndEachBlock) {
  const ClockOffset clock{1700000000.0, 10};
  const auto view = open_view();
  const auto page = memory_timeline_page(kId, "train", timeline(), clock, nullptr, &view);
  const auto section = page.find("Inside segments");
  ASSERT_NE(section, std::string::npos);
  const auto bars = page.substr(section);
  EXPECT_EQ(count(bars, "class=\"segment\""), 2u);
  EXPECT_EQ(count(bars, "<rect class=\"live\""), 2u)
      << "the block of the freed segment is not drawn";
  EXPECT_EQ(count(bars, "<rect class=\"cached\""), 1u);
  EXPECT_NE(page.find("5.0 MiB in live tensors"), std::string::npos) << page;
  const auto closed = memory_timeline_page(kId, "train", timeline(), clock);
  EXPECT_EQ(closed.find("Inside segments"), std::string::npos);
}

TEST(SegmentLayout, OnlyTheLargestSegmentsAreDrawn) {
  const auto html = segment_layout_html(timeline(), open_view(), nullptr, 1);
  EXPECT_EQ(count(html, "class=\"segment\""), 1u);
  EXPECT_NE(html.find("The 1 largest segments are drawn"), std::string::npos);
}

} // namespace
} // namespace neutracer
