// SPDX-License-Identifier: Apache-2.0
#include "exporters/flame_graph_page.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <vector>

#include "common/human_bytes.h"
#include "exporters/html_escape.h"
#include "exporters/process_index_page.h"

namespace neutracer {
namespace {

constexpr double kWidth = 1200, kRowHeight = 18, kMargin = 10;
constexpr double kCharWidth = 7; // at font-size 12: labels are cut to what fits

struct WeightInfo {
  FlameWeight weight;
  std::string_view name;
  std::string_view title;
};
constexpr std::array<WeightInfo, 5> kWeights = {{
    {FlameWeight::live_bytes, "live_bytes", "GPU memory still allocated"},
    {FlameWeight::allocated_bytes, "allocated_bytes", "GPU memory allocated since tracing began"},
    {FlameWeight::failed_allocations, "failed_allocations", "failed allocations"},
    {FlameWeight::launch_samples, "launch_samples", "sampled kernel launches"},
    {FlameWeight::wait_seconds, "wait_seconds", "time waiting in synchronisations"},
}};

double weight_of(const SiteCounts &counts, FlameWeight weight) {
  switch (weight) {
  case FlameWeight::live_bytes:
    return static_cast<double>(counts.live_bytes);
  case FlameWeight::allocated_bytes:
    return static_cast<double>(counts.allocated_bytes);
  case FlameWeight::failed_allocations:
    return static_cast<double>(counts.failed_allocations);
  case FlameWeight::launch_samples:
    return static_cast<double>(counts.launch_samples);
  case FlameWeight::wait_seconds:
    return counts.wait_seconds + counts.longest_pending_seconds;
  }
  return 0;
}

std::string amount(double value, FlameWeight weight) {
  char text[64];
  switch (weight) {
  case FlameWeight::live_bytes:
  case FlameWeight::allocated_bytes:
    return human_bytes(value, 1);
  case FlameWeight::wait_seconds:
    std::snprintf(text, sizeof text, "%.3f s", value);
    return text;
  default:
    std::snprintf(text, sizeof text, "%.0f", value);
    return text;
  }
}

std::string format(const char *pattern, double a, double b = 0, double c = 0, double d = 0) {
  char text[160];
  std::snprintf(text, sizeof text, pattern, a, b, c, d);
  return text;
}

struct Node {
  std::string label;
  double weight = 0;
  std::vector<Node> children; // in first-seen order
  Node &child(const std::string &name) {
    for (auto &node : children)
      if (node.label == name)
        return node;
    children.push_back(Node{name, 0, {}});
    return children.back();
  }
};

// Warm colours by name, so a function keeps its colour between reloads.
std::string colour(const std::string &label) {
  const auto hash = std::hash<std::string>{}(label);
  const int red = 205 + static_cast<int>(hash % 50);
  const int green = 80 + static_cast<int>((hash >> 8) % 140);
  const int blue = static_cast<int>((hash >> 16) % 55);
  char text[16];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", red, green, blue);
  return text;
}

int depth_of(const Node &node) {
  int deepest = 0;
  for (const auto &child : node.children)
    deepest = std::max(deepest, depth_of(child));
  return deepest + 1;
}

void draw(const Node &node, double x, int depth, int rows, double total, FlameWeight weight,
          std::string &svg) {
  const double width = (kWidth - 2 * kMargin) * node.weight / total;
  const double y = kMargin + (rows - 1 - depth) * kRowHeight;
  const auto fits = static_cast<std::size_t>(std::max(0.0, (width - 6) / kCharWidth));
  std::string shown = node.label.size() <= fits ? node.label
                      : fits > 2                ? node.label.substr(0, fits - 2) + ".."
                                                : std::string();
  svg += "<g class=\"f\" data-x=\"" + format("%.6f", (x - kMargin) / (kWidth - 2 * kMargin)) +
         "\" data-w=\"" + format("%.6f", node.weight / total) + "\" data-d=\"" +
         std::to_string(depth) + "\"><title>" + html_escape(node.label) + ": " +
         amount(node.weight, weight) + format(" (%.1f%%)", 100 * node.weight / total) +
         "</title><rect x=\"" + format("%.2f", x) + "\" y=\"" + format("%.1f", y) + "\" width=\"" +
         format("%.2f", std::max(0.5, width - 0.5)) + "\" height=\"" +
         format("%.0f", kRowHeight - 1) + "\" fill=\"" + colour(node.label) +
         "\" rx=\"2\"/><text x=\"" + format("%.2f", x + 3) + "\" y=\"" +
         format("%.1f", y + kRowHeight - 5) + "\">" + html_escape(shown) + "</text></g>\n";
  double child_x = x;
  for (const auto &child : node.children) {
    draw(child, child_x, depth + 1, rows, total, weight, svg);
    child_x += (kWidth - 2 * kMargin) * child.weight / total;
  }
}

// Zooms into a clicked frame: it and its callees fill the width, its callers stay as bars.
constexpr const char *kZoomScript = R"(<script>
(function () {
  var svg = document.getElementById('flame'), W = svg.viewBox.baseVal.width, M = 10;
  function zoom(x0, w0, d0) {
    svg.querySelectorAll('g.f').forEach(function (g) {
      var x = +g.dataset.x, w = +g.dataset.w, d = +g.dataset.d;
      var inside = d < d0 ? (x <= x0 + 1e-9 && x + w >= x0 + w0 - 1e-9)
                          : (x >= x0 - 1e-9 && x + w <= x0 + w0 + 1e-9);
      g.style.display = inside ? '' : 'none';
      if (!inside) return;
      var nx = d < d0 ? 0 : (x - x0) / w0, nw = d < d0 ? 1 : w / w0;
      var rect = g.querySelector('rect'), text = g.querySelector('text');
      rect.setAttribute('x', M + nx * (W - 2 * M));
      rect.setAttribute('width', Math.max(0.5, nw * (W - 2 * M) - 0.5));
      text.setAttribute('x', M + nx * (W - 2 * M) + 3);
      var label = g.querySelector('title').textContent.replace(/: [^:]*$/, '');
      var fits = Math.floor((nw * (W - 2 * M) - 6) / 7);
      text.textContent = label.length <= fits ? label : fits > 2 ? label.slice(0, fits - 2) + '..' : '';
    });
  }
  svg.addEventListener('click', function (e) {
    var g = e.target.closest('g.f');
    if (g) zoom(+g.dataset.x, +g.dataset.w, +g.dataset.d);
  });
  document.getElementById('reset').addEventListener('click', function () { zoom(0, 1, 0); });
})();
</script>
)";

} // namespace

std::string_view flame_weight_name(FlameWeight weight) {
  for (const auto &info : kWeights)
    if (info.weight == weight)
      return info.name;
  return "live_bytes";
}

std::optional<FlameWeight> parse_flame_weight(std::string_view name) {
  for (const auto &info : kWeights)
    if (info.name == name)
      return info.weight;
  return std::nullopt;
}

FlameWeight default_flame_weight(const ProcessSitesView &sites) {
  for (const auto weight : {FlameWeight::live_bytes, FlameWeight::failed_allocations,
                            FlameWeight::launch_samples, FlameWeight::wait_seconds})
    for (const auto &site : sites.sites)
      if (weight_of(site.counts, weight) > 0)
        return weight;
  return FlameWeight::allocated_bytes;
}

std::string flame_graph_svg(const ProcessSitesView &sites, FlameWeight weight) {
  Node root{"all", 0, {}};
  for (const auto &site : sites.sites) {
    const double value = weight_of(site.counts, weight);
    if (value <= 0)
      continue;
    root.weight += value;
    Node *node = &root;
    if (!site.stack) {
      node = &node->child(site.kind == SiteKind::no_stack ? "[stack not stored]"
                                                          : "[sites over the limit]");
      node->weight += value;
      continue;
    }
    // Outermost first. A stack cut short says so where its missing callers would be.
    if (site.stack->end != StackEnd::complete) {
      std::string label = "["; // not "[" + std::string: GCC 12 -O3 -Wrestrict false positive
      label += stack_end_name(site.stack->end);
      label += ']';
      node = &node->child(label);
      node->weight += value;
    }
    for (auto frame = site.stack->frames.rbegin(); frame != site.stack->frames.rend(); ++frame) {
      node = &node->child(frame_text(*frame));
      node->weight += value;
    }
  }
  const int rows = depth_of(root);
  const double height = 2 * kMargin + rows * kRowHeight;
  std::string svg = format("<svg id=\"flame\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                           "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"monospace\" "
                           "font-size=\"12\" style=\"cursor:pointer\">\n",
                           kWidth, height, kWidth, height);
  if (root.weight > 0)
    draw(root, kMargin, 0, rows, root.weight, weight, svg);
  else
    svg += format("<text x=\"%.0f\" y=\"%.0f\">nothing recorded for this view yet</text>\n",
                  kMargin, kMargin + 12);
  svg += "</svg>\n";
  return svg;
}

std::string flame_graph_page(const ProcessId &id, const std::string &comm,
                             const ProcessSitesView &sites, FlameWeight weight) {
  const std::string who = html_escape(comm) + " (pid " + std::to_string(id.pid) + ")";
  std::string title;
  for (const auto &info : kWeights)
    if (info.weight == weight)
      title = std::string(info.title);
  std::string page = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Call sites of " +
                     who + "</title></head>\n<body style=\"font-family:sans-serif\">\n<h1>" +
                     html_escape(title) + " by call site: " + who + "</h1>\n<p>Weight:";
  for (const auto &info : kWeights)
    page += info.weight == weight
                ? " <b>" + std::string(info.name) + "</b>"
                : " <a href=\"/flame?pid=" + std::to_string(id.pid) +
                      "&amp;by=" + std::string(info.name) + "\">" + std::string(info.name) + "</a>";
  page += ". Callers below, callees above; each frame is as wide as its stacks' " +
          html_escape(title) +
          ". Click a frame to zoom, <button id=\"reset\">reset</button>. "
          "Frames in [brackets] mark stacks cut short (no_frame_pointer, depth_limit, "
          "unresolved) or not stored. <a href=\"/api/v1/processes/" +
          std::to_string(id.pid) +
          "/sites\">JSON</a>, <a href=\"/memory?pid=" + std::to_string(id.pid) +
          "\">memory timeline</a>, <a href=\"/flame\">all "
          "processes</a></p>\n";
  page += flame_graph_svg(sites, weight);
  page += kZoomScript;
  page += "</body></html>\n";
  return page;
}

std::string
flame_graph_index(const std::map<ProcessId, std::shared_ptr<const ProcessSitesView>> &sites,
                  const std::map<ProcessId, std::string> &comms) {
  std::map<ProcessId, std::string> summaries;
  for (const auto &[id, view] : sites)
    summaries.emplace(id, std::to_string(view->sites.size()) + " sites");
  return process_index_page("Call sites", "/flame", summaries, comms);
}

} // namespace neutracer
