// SPDX-License-Identifier: Apache-2.0
#include "exporters/memory_timeline_page.h"

#include "exporters/html_escape.h"
#include "exporters/process_index_page.h"
#include "exporters/segment_layout.h"
#include "exporters/site_tooltip.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>

#include "common/human_bytes.h"
#include "common/text.h"

namespace neutracer {
namespace {

constexpr double kWidth = 1100, kHeight = 560;
constexpr int kRefreshSeconds = 5;
constexpr double kLeft = 110, kRight = 20, kTop = 50, kBottom = 50;
constexpr double kPlotWidth = kWidth - kLeft - kRight;
constexpr double kPlotHeight = kHeight - kTop - kBottom;

std::string format(const char *pattern, double a, double b = 0, double c = 0, double d = 0) {
  char text[160];
  std::snprintf(text, sizeof text, pattern, a, b, c, d);
  return text;
}

std::string human_bytes(double bytes) { return neutracer::human_bytes(bytes, 1); }

// "07:12:05.123" (UTC), rounded to `decimals` digits of the second (0, 1 or 3).
std::string utc_time(double unix_seconds, int decimals) {
  const long long scale = decimals >= 3 ? 1000 : decimals > 0 ? 10 : 1;
  const long long units = std::llround(unix_seconds * static_cast<double>(scale));
  const long long fraction = ((units % scale) + scale) % scale;
  const auto whole = static_cast<std::time_t>((units - fraction) / scale);
  tm parts{};
  gmtime_r(&whole, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%H:%M:%S", &parts);
  std::string out = text;
  if (scale > 1) {
    std::snprintf(text, sizeof text, scale == 1000 ? ".%03lld" : ".%lld", fraction);
    out += text;
  }
  return out;
}

std::string utc_date(double unix_seconds) {
  const auto whole = static_cast<std::time_t>(std::floor(unix_seconds));
  tm parts{};
  gmtime_r(&whole, &parts);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &parts);
  return text;
}

// From `from` to `to`, never negative (a block stamped after the snapshot's clock was read).
double seconds_between(std::uint64_t from, std::uint64_t to) {
  return to > from ? static_cast<double>(to - from) / 1e9 : 0.0;
}

// Reloads the page's #timeline from the daemon every few seconds while the box is ticked and
// the tab is visible; stops when the process is gone (404).
constexpr const char *kRefreshScript = R"(<script>
(function () {
  const box = document.getElementById('follow');
  const status = document.getElementById('status');
  async function refresh() {
    if (!box.checked || document.hidden)
      return;
    try {
      const reply = await fetch(location.href, {cache: 'no-store'});
      if (reply.status === 404) {
        box.checked = false;
        status.textContent = 'the process has exited: refresh stopped';
        return;
      }
      if (!reply.ok) {
        status.textContent = 'refresh failed: HTTP ' + reply.status;
        return;
      }
      const page = new DOMParser().parseFromString(await reply.text(), 'text/html');
      const fresh = page.getElementById('timeline');
      if (fresh) {
        document.getElementById('timeline').replaceWith(fresh);
        status.textContent = 'updated at ' + new Date().toLocaleTimeString();
      }
    } catch (error) {
      status.textContent = 'the daemon did not answer: ' + error.message;
    }
  }
  setInterval(refresh, REFRESH_MS);
})();
</script>
)";

} // namespace

std::string memory_timeline_svg(const ProcessTimeline &timeline, const ClockOffset &clock,
                                const ProcessSitesView *sites) {
  const std::uint64_t now_ns = clock.monotonic_now_ns;
  const auto at = [&](std::uint64_t t) { return utc_time(clock.to_unix(t), 3); };
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
           "stroke-width=\"0.3\"><title>" + hex_text(block.address) + " " +
           human_bytes(static_cast<double>(block.bytes)) + ", allocated " + at(block.allocated_ns) +
           (live ? format(", live (for %.3f s)", seconds_between(block.allocated_ns, now_ns))
                 : ", freed " + at(block.freed_ns) +
                       format(" (after %.3f s)",
                              seconds_between(block.allocated_ns, block.freed_ns))) +
           site_tooltip(sites, block.site) + "</title></rect>\n";
  }
  for (const auto &failure : timeline.failures) {
    const double x = x_of(failure.time_ns);
    svg += format("<line class=\"failed\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" "
                  "stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"4 3\">",
                  x, kTop, x, kTop + kPlotHeight);
    svg += "<title>failed allocation of " + human_bytes(static_cast<double>(failure.bytes)) +
           " at " + at(failure.time_ns) + site_tooltip(sites, failure.site) + "</title></line>\n";
    svg += format("<path d=\"M %.1f %.0f l -6 -10 l 12 0 z\" fill=\"#d62728\"/>\n", x, kTop);
  }
  // Axes: wall-clock time (UTC) along the bottom, stacked address space on the left.
  const int decimals = span_ns < 2e9 ? 3 : span_ns < 20e9 ? 1 : 0;
  for (int i = 0; i <= 5; ++i) {
    const double x = kLeft + kPlotWidth * i / 5;
    const double tick = clock.to_unix(start_ns) + span_ns / 1e9 * i / 5;
    svg += format("<text class=\"tick\" x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">", x,
                  kTop + kPlotHeight + 18) +
           utc_time(tick, decimals) + "</text>\n";
  }
  for (int i = 0; i <= 4; ++i) {
    const double y = kTop + kPlotHeight - kPlotHeight * i / 4;
    svg += "<text x=\"" + format("%.0f", kLeft - 6) + "\" y=\"" + format("%.1f", y + 4) +
           "\" text-anchor=\"end\">" + human_bytes(total * i / 4) + "</text>\n";
  }
  svg += format("<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">", kLeft + kPlotWidth / 2,
                kHeight - 12) +
         "time (UTC, " + utc_date(clock.to_unix(start_ns)) +
         format(", %.1f s shown)", span_ns / 1e9) + "</text>\n";
  svg += format("<text transform=\"translate(16 %.0f) rotate(-90)\" text-anchor=\"middle\">"
                "allocations stacked by address</text>\n",
                kTop + kPlotHeight / 2);
  svg += "</svg>\n";
  return svg;
}

std::string memory_timeline_page(const ProcessId &id, const std::string &comm,
                                 const ProcessTimeline &timeline, const ClockOffset &clock,
                                 const ProcessSitesView *sites,
                                 const AllocatorViewSummary *allocator) {
  std::size_t live = 0;
  std::uint64_t live_bytes = 0;
  for (const auto &block : timeline.blocks)
    if (block.freed_ns == 0) {
      ++live;
      live_bytes += block.bytes;
    }
  std::string page =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>GPU memory of " +
      html_escape(comm) + " (pid " + std::to_string(id.pid) +
      ")</title></head>\n<body style=\"font-family:sans-serif\">\n<h1>GPU memory of " +
      html_escape(comm) + " (pid " + std::to_string(id.pid) + ")</h1>\n" +
      "<p><label><input type=\"checkbox\" id=\"follow\" checked> refresh every " +
      std::to_string(kRefreshSeconds) + " s</label> <span id=\"status\"></span></p>\n" +
      "<div id=\"timeline\">\n<p>" + std::to_string(timeline.blocks.size()) +
      " allocations recorded, " + std::to_string(live) + " live (" +
      human_bytes(static_cast<double>(live_bytes)) + "), " +
      std::to_string(timeline.failures.size()) + " failed allocations";
  if (timeline.dropped_blocks > 0)
    page += ", " + std::to_string(timeline.dropped_blocks) + " older allocations not shown";
  page += ". Dark blue: live; light blue: freed; red: failed allocation. Hover for details";
  if (sites)
    page +=
        " and the call site of each allocation; <a href=\"/flame?pid=" + std::to_string(id.pid) +
        "\">call sites as a flame graph</a>";
  page += ". <a href=\"/memory\">All processes</a></p>\n";
  page += memory_timeline_svg(timeline, clock, sites);
  if (allocator && allocator->open)
    page += segment_layout_html(timeline, *allocator, sites);
  page += "</div>\n";
  std::string script = kRefreshScript;
  script.replace(script.find("REFRESH_MS"), 10, std::to_string(kRefreshSeconds * 1000));
  page += script;
  page += "</body></html>\n";
  return page;
}

std::string memory_timeline_index(const std::map<ProcessId, ProcessTimeline> &timelines,
                                  const std::map<ProcessId, std::string> &comms) {
  std::map<ProcessId, std::string> summaries;
  for (const auto &[id, timeline] : timelines)
    summaries.emplace(id, std::to_string(timeline.blocks.size()) + " allocations");
  return process_index_page("GPU memory timelines", "/memory", summaries, comms);
}

} // namespace neutracer
