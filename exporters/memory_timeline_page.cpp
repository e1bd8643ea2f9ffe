#include "exporters/memory_timeline_page.h"

#include "exporters/html_escape.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "common/human_bytes.h"

namespace neutracer {
namespace {

constexpr double kWidth = 1100, kHeight = 560;
constexpr double kLeft = 110, kRight = 20, kTop = 50, kBottom = 50;
constexpr double kPlotWidth = kWidth - kLeft - kRight;
constexpr double kPlotHeight = kHeight - kTop - kBottom;

std::string format(const char *pattern, double a, double b = 0, double c = 0, double d = 0) {
  char text[160];
  std::snprintf(text, sizeof text, pattern, a, b, c, d);
  return text;
}

std::string human_bytes(double bytes) { return neutracer::human_bytes(bytes, 1); }

std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// ", from leak_here (trainer+0x1234)" for a block whose site is known; empty otherwise.
std::string site_text(const ProcessSitesView *sites, std::int32_t site) {
  if (!sites || site < 0 || static_cast<std::size_t>(site) >= sites->sites.size())
    return {};
  const auto &found = sites->sites[static_cast<std::size_t>(site)];
  if (!found.stack)
    return found.kind == SiteKind::no_stack ? ", stack not stored" : std::string();
  const Frame *frame = headline_frame(*found.stack);
  return frame ? ", from " + html_escape(frame_text(*frame)) : std::string();
}

} // namespace

std::string memory_timeline_svg(const ProcessTimeline &timeline, std::uint64_t now_ns,
                                const ProcessSitesView *sites) {
  // Vertical axis: allocations in address order, each address range stacked on the one below,
  // so the picture keeps the driver's layout without the gaps of a 64-bit address space.
  std::map<std::uint64_t, std::uint64_t> extent_of_address; // largest block seen at an address
  std::uint64_t start_ns = now_ns;
  for (const auto &block : timeline.blocks) {
    auto &extent = extent_of_address[block.address];
    extent = std::max(extent, block.bytes);
    start_ns = std::min(start_ns, block.allocated_ns);
  }
  for (const auto &failure : timeline.failures)
    start_ns = std::min(start_ns, failure.time_ns);
  std::map<std::uint64_t, double> offset_of_address;
  double total = 0;
  for (const auto &[address, extent] : extent_of_address) {
    offset_of_address[address] = total;
    total += static_cast<double>(extent);
  }
  const double span_ns = std::max<double>(1e6, static_cast<double>(now_ns - start_ns));
  const double y_scale = total > 0 ? kPlotHeight / total : 0;
  auto x_of = [&](std::uint64_t t) {
    return kLeft + kPlotWidth * static_cast<double>(std::min(t, now_ns) - start_ns) / span_ns;
  };

  std::string svg = format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                           "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
                           "font-size=\"12\">\n",
                           kWidth, kHeight, kWidth, kHeight);
  svg += format("<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#f7f7f7\" "
                "stroke=\"#999\"/>\n",
                kLeft, kTop, kPlotWidth, kPlotHeight);
  for (const auto &block : timeline.blocks) {
    const double x0 = x_of(block.allocated_ns);
    const double x1 = x_of(block.freed_ns ? block.freed_ns : now_ns);
    const double height = std::max(1.0, static_cast<double>(block.bytes) * y_scale);
    const double y = kTop + kPlotHeight - offset_of_address[block.address] * y_scale - height;
    const bool live = block.freed_ns == 0;
    svg += std::string("<rect class=\"") + (live ? "live" : "freed") + "\"" +
           format(" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"", x0, y,
                  std::max(1.0, x1 - x0), height);
    svg += std::string(" fill=\"") + (live ? "#2f6fb3" : "#a9c4e0") + "\" stroke=\"#1d3f66\" " +
           "stroke-width=\"0.3\"><title>" + hex(block.address) + " " +
           human_bytes(static_cast<double>(block.bytes)) +
           format(", allocated at %.3f s", (block.allocated_ns - start_ns) / 1e9) +
           (live ? ", live" : format(", freed at %.3f s", (block.freed_ns - start_ns) / 1e9)) +
           site_text(sites, block.site) + "</title></rect>\n";
  }
  for (const auto &failure : timeline.failures) {
    const double x = x_of(failure.time_ns);
    svg += format("<line class=\"failed\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" "
                  "stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"4 3\">",
                  x, kTop, x, kTop + kPlotHeight);
    svg += "<title>failed allocation of " + human_bytes(static_cast<double>(failure.bytes)) +
           format(" at %.3f s", (failure.time_ns - start_ns) / 1e9) +
           site_text(sites, failure.site) + "</title></line>\n";
    svg += format("<path d=\"M %.1f %.0f l -6 -10 l 12 0 z\" fill=\"#d62728\"/>\n", x, kTop);
  }
  // Axes: time along the bottom, stacked address space on the left.
  for (int i = 0; i <= 5; ++i) {
    const double x = kLeft + kPlotWidth * i / 5;
    svg += format("<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.1f s</text>\n", x,
                  kTop + kPlotHeight + 18, span_ns / 1e9 * i / 5);
  }
  for (int i = 0; i <= 4; ++i) {
    const double y = kTop + kPlotHeight - kPlotHeight * i / 4;
    svg += "<text x=\"" + format("%.0f", kLeft - 6) + "\" y=\"" + format("%.1f", y + 4) +
           "\" text-anchor=\"end\">" + human_bytes(total * i / 4) + "</text>\n";
  }
  svg += format("<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">time since the first "
                "recorded allocation</text>\n",
                kLeft + kPlotWidth / 2, kHeight - 12);
  svg += format("<text transform=\"translate(16 %.0f) rotate(-90)\" text-anchor=\"middle\">"
                "allocations stacked by address</text>\n",
                kTop + kPlotHeight / 2);
  svg += "</svg>\n";
  return svg;
}

std::string memory_timeline_page(const ProcessId &id, const std::string &comm,
                                 const ProcessTimeline &timeline, std::uint64_t now_ns,
                                 const ProcessSitesView *sites) {
  std::size_t live = 0;
  std::uint64_t live_bytes = 0;
  for (const auto &block : timeline.blocks)
    if (block.freed_ns == 0) {
      ++live;
      live_bytes += block.bytes;
    }
  std::string page =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>GPU memory of " + html_escape(comm) +
      " (pid " + std::to_string(id.pid) +
      ")</title></head>\n<body style=\"font-family:sans-serif\">\n<h1>GPU memory of " +
      html_escape(comm) + " (pid " + std::to_string(id.pid) + ")</h1>\n<p>" +
      std::to_string(timeline.blocks.size()) + " allocations recorded, " + std::to_string(live) +
      " live (" + human_bytes(static_cast<double>(live_bytes)) + "), " +
      std::to_string(timeline.failures.size()) + " failed allocations";
  if (timeline.dropped_blocks > 0)
    page += ", " + std::to_string(timeline.dropped_blocks) + " older allocations not shown";
  page += ". Dark blue: live; light blue: freed; red: failed allocation. Hover for details";
  if (sites)
    page +=
        " and the call site of each allocation; <a href=\"/flame?pid=" + std::to_string(id.pid) +
        "\">call sites as a flame graph</a>";
  page += ". <a href=\"/memory\">All processes</a></p>\n";
  page += memory_timeline_svg(timeline, now_ns, sites);
  page += "</body></html>\n";
  return page;
}

std::string memory_timeline_index(const std::map<ProcessId, ProcessTimeline> &timelines,
                                  const std::map<ProcessId, std::string> &comms) {
  std::string page = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>GPU memory "
                     "timelines</title></head>\n<body style=\"font-family:sans-serif\">\n"
                     "<h1>GPU memory timelines</h1>\n<ul>\n";
  for (const auto &[id, timeline] : timelines) {
    const auto comm = comms.contains(id) ? comms.at(id) : std::string("?");
    page += "<li><a href=\"/memory?pid=" + std::to_string(id.pid) + "\">" + html_escape(comm) +
            " (pid " + std::to_string(id.pid) + ")</a>: " + std::to_string(timeline.blocks.size()) +
            " allocations</li>\n";
  }
  page += "</ul></body></html>\n";
  return page;
}

} // namespace neutracer
