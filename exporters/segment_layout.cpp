// SPDX-License-Identifier: Apache-2.0
#include "exporters/segment_layout.h"

#include <algorithm>
#include <cstdio>

#include "common/human_bytes.h"
#include "common/text.h"
#include "exporters/site_tooltip.h"

namespace neutracer {
namespace {

constexpr double kBarWidth = 900, kBarHeight = 14, kRowHeight = 22, kLabelWidth = 330;
constexpr const char *kLiveColour = "#2ca02c", *kCachedColour = "#f2b632",
                     *kUnseenColour = "#e4e4e4";

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string bytes_text(std::uint64_t bytes) { return human_bytes(static_cast<double>(bytes), 1); }

} // namespace

std::vector<SegmentBlocks> segment_layout(const ProcessTimeline &timeline,
                                          const AllocatorViewSummary &view) {
  std::vector<Segment> segments;
  for (const auto &block : timeline.blocks)
    if (block.freed_ns == 0 && block.bytes > 0)
      segments.push_back({block.address, block.bytes});
  return blocks_in_segments(std::move(segments), view.blocks);
}

nlohmann::json segment_layout_json(const ProcessTimeline &timeline,
                                   const AllocatorViewSummary &view) {
  auto segments = nlohmann::json::array();
  for (const auto &entry : segment_layout(timeline, view)) {
    auto blocks = nlohmann::json::array();
    for (const auto &block : entry.blocks)
      blocks.push_back({{"offset", block.address - entry.segment.address},
                        {"bytes", block.bytes},
                        {"state", block.live ? "live" : "cached"},
                        {"site", block.site}});
    segments.push_back({{"address", entry.segment.address},
                        {"bytes", entry.segment.bytes},
                        {"live_bytes", entry.live_bytes},
                        {"cached_bytes", entry.cached_bytes},
                        {"unseen_bytes", entry.unseen_bytes()},
                        {"blocks", std::move(blocks)}});
  }
  return {{"open", view.open},
          {"blocks_left_out", view.blocks_left_out},
          {"segments", std::move(segments)}};
}

std::string segment_layout_html(const ProcessTimeline &timeline, const AllocatorViewSummary &view,
                                const ProcessSitesView *sites, std::size_t max_segments) {
  auto layout = segment_layout(timeline, view);
  std::stable_sort(layout.begin(), layout.end(),
                   [](const auto &a, const auto &b) { return a.segment.bytes > b.segment.bytes; });
  const std::size_t shown = std::min(layout.size(), max_segments);
  std::uint64_t live = 0, cached = 0, total = 0;
  for (const auto &entry : layout) {
    live += entry.live_bytes;
    cached += entry.cached_bytes;
    total += entry.segment.bytes;
  }
  std::string html = "<h2>Inside segments (PyTorch allocator view)</h2>\n<p>" +
                     std::to_string(layout.size()) + " segments, " + bytes_text(total) + ": " +
                     bytes_text(live) + " in live tensors, " + bytes_text(cached) +
                     " cached (freed into the pool), " + bytes_text(total - live - cached) +
                     " unseen (free, handed out before the view opened, or small blocks not "
                     "sampled). Green: live; amber: cached; grey: unseen";
  if (shown < layout.size())
    html += ". The " + std::to_string(shown) + " largest segments are drawn";
  if (view.blocks_left_out > 0)
    html += "; " + std::to_string(view.blocks_left_out) + " smaller blocks are not drawn";
  html += ".</p>\n";
  if (shown == 0)
    return html;
  const double largest = static_cast<double>(layout.front().segment.bytes);
  const double height = kRowHeight * static_cast<double>(shown) + 8;
  html += "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"segments\" width=\"" +
          number(kLabelWidth + kBarWidth + 10) + "\" height=\"" + number(height) +
          "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  for (std::size_t row = 0; row < shown; ++row) {
    const auto &entry = layout[row];
    const double y = kRowHeight * static_cast<double>(row) + 4;
    const double scale = kBarWidth / largest; // pixels per byte, the same in every row
    const double width = static_cast<double>(entry.segment.bytes) * scale;
    html += "<text x=\"0\" y=\"" + number(y + 11) + "\">" + hex_text(entry.segment.address) + " " +
            bytes_text(entry.segment.bytes) + ": " + bytes_text(entry.live_bytes) + " live, " +
            bytes_text(entry.cached_bytes) + " cached</text>\n";
    html += "<rect class=\"segment\" x=\"" + number(kLabelWidth) + "\" y=\"" + number(y) +
            "\" width=\"" + number(std::max(1.0, width)) + "\" height=\"" + number(kBarHeight) +
            "\" fill=\"" + kUnseenColour + "\" stroke=\"#999\" stroke-width=\"0.5\"/>\n";
    for (const auto &block : entry.blocks) {
      const auto offset = block.address - entry.segment.address;
      const auto inside = std::min(block.bytes, entry.segment.bytes - offset);
      html += std::string("<rect class=\"") + (block.live ? "live" : "cached") + "\" x=\"" +
              number(kLabelWidth + static_cast<double>(offset) * scale) + "\" y=\"" + number(y) +
              "\" width=\"" + number(std::max(0.5, static_cast<double>(inside) * scale)) +
              "\" height=\"" + number(kBarHeight) + "\" fill=\"" +
              (block.live ? kLiveColour : kCachedColour) + "\"><title>" + hex_text(block.address) +
              " " + bytes_text(block.bytes) + (block.live ? ", live" : ", cached") +
              site_tooltip(sites, block.site) + "</title></rect>\n";
    }
  }
  html += "</svg>\n";
  return html;
}

} // namespace neutracer
