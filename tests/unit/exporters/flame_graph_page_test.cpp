// SPDX-License-Identifier: Apache-2.0
// The flame graph page and the memory page's call-site tooltips.
#include "exporters/flame_graph_page.h"

#include <gtest/gtest.h>

#include "exporters/memory_timeline_page.h"

namespace neutracer {
namespace {

Frame named(const std::string &function, std::uint64_t offset) {
  Frame frame;
  frame.function = std::make_shared<const std::string>(function);
  frame.module = std::make_shared<const std::string>("/opt/app");
  frame.module_offset = offset;
  return frame;
}

// Two stacks under main: leak (3 MiB live) and temp (1 MiB live), the second cut short.
ProcessSitesView two_sites() {
  ProcessSitesView view;
  Site leak;
  leak.stack = std::make_shared<const SymbolizedStack>(
      SymbolizedStack{{named("leak_here", 0x10), named("main", 0x20)}, StackEnd::complete});
  leak.counts.live_bytes = 3 << 20;
  Site temp;
  temp.stack = std::make_shared<const SymbolizedStack>(
      SymbolizedStack{{named("temp<int>", 0x30), named("main", 0x20)}, StackEnd::no_frame_pointer});
  temp.counts.live_bytes = 1 << 20;
  temp.counts.launch_samples = 5;
  view.sites = {leak, temp};
  return view;
}

// The width of the <rect> of the first frame whose title starts with `label`.
double width_of(const std::string &svg, const std::string &label) {
  const auto title = svg.find("<title>" + label);
  if (title == std::string::npos)
    return -1;
  const auto width = svg.find("width=\"", title);
  return std::stod(svg.substr(width + 7));
}

TEST(FlameGraph, FramesAreAsWideAsTheirStacksWeigh) {
  const auto svg = flame_graph_svg(two_sites(), FlameWeight::live_bytes);
  const double all = width_of(svg, "all");
  const double leak = width_of(svg, "leak_here (app+0x10)");
  const double temp = width_of(svg, "temp&lt;int&gt; (app+0x30)"); // escaped
  ASSERT_GT(all, 0);
  EXPECT_NEAR(leak / all, 0.75, 0.01);
  EXPECT_NEAR(temp / all, 0.25, 0.01);
  // The cut stack says so below its outermost frame; the complete one has main at the root.
  EXPECT_NE(svg.find("<title>[no_frame_pointer]: 1.0 MiB (25.0%)"), std::string::npos) << svg;
  EXPECT_NE(svg.find("<title>main (app+0x20): 3.0 MiB (75.0%)"), std::string::npos) << svg;
}

TEST(FlameGraph, WeightsAndTheEmptyView) {
  const auto launches = flame_graph_svg(two_sites(), FlameWeight::launch_samples);
  EXPECT_EQ(launches.find("leak_here"), std::string::npos) << "no launches there";
  EXPECT_NE(launches.find("temp&lt;int&gt;"), std::string::npos);
  EXPECT_NE(flame_graph_svg(ProcessSitesView{}, FlameWeight::live_bytes).find("nothing recorded"),
            std::string::npos);
  EXPECT_EQ(parse_flame_weight("wait_seconds"), FlameWeight::wait_seconds);
  EXPECT_EQ(parse_flame_weight("bytes"), std::nullopt);
  EXPECT_EQ(default_flame_weight(two_sites()), FlameWeight::live_bytes);
  ProcessSitesView only_launches = two_sites();
  for (auto &site : only_launches.sites)
    site.counts.live_bytes = 0;
  EXPECT_EQ(default_flame_weight(only_launches), FlameWeight::launch_samples);
}

TEST(FlameGraph, PageEscapesTheCommAndLinksTheOtherViews) {
  const auto page = flame_graph_page({42, 1}, "<train>", two_sites(), FlameWeight::live_bytes);
  EXPECT_NE(page.find("&lt;train&gt; (pid 42)"), std::string::npos);
  EXPECT_EQ(page.find("<train>"), std::string::npos);
  EXPECT_NE(page.find("href=\"/flame?pid=42&amp;by=launch_samples\""), std::string::npos);
  EXPECT_NE(page.find("href=\"/api/v1/processes/42/sites\""), std::string::npos);
  EXPECT_NE(page.find("<script>"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos) << "nothing fetched: works offline";
}

TEST(MemoryPageSites, TooltipsNameTheCallSite) {
  ProcessTimeline timeline;
  timeline.blocks.push_back({0x1000, 4096, 1'000, 0, 0});
  timeline.blocks.push_back({0x2000, 4096, 2'000, 0, -1});
  timeline.failures.push_back({3'000, 1 << 30, 1});
  const auto sites = two_sites();
  const ClockOffset clock{1.7e9, 10'000};
  const auto svg = memory_timeline_svg(timeline, clock, &sites);
  EXPECT_NE(svg.find("live (for 0.000 s), from leak_here (app+0x10)</title>"), std::string::npos)
      << svg;
  EXPECT_NE(svg.find("live (for 0.000 s)</title>"), std::string::npos)
      << "an unknown site adds nothing";
  EXPECT_NE(svg.find("from temp&lt;int&gt; (app+0x30)</title></line>"), std::string::npos) << svg;
  EXPECT_EQ(memory_timeline_svg(timeline, clock).find("from "), std::string::npos);
}

} // namespace
} // namespace neutracer
