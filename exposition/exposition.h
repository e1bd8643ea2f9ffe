// SPDX-License-Identifier: Apache-2.0
#pragma once
// Prometheus text exposition format 0.0.4: a small metric model and a pure renderer.
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace neutracer {

enum class MetricType { counter, gauge, histogram, untyped };

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
  Labels labels;
  double value = 0;
};

// One histogram series. bucket_counts[i] counts observations in
// (upper_bounds[i-1], upper_bounds[i]] (not cumulative); observations above the
// last bound are only in `count`. The renderer emits cumulative _bucket lines
// plus le="+Inf", then _sum and _count.
struct HistogramSample {
  Labels labels;
  std::vector<double> upper_bounds;
  std::vector<std::uint64_t> bucket_counts;
  double sum = 0;
  std::uint64_t count = 0;
};

struct MetricFamily {
  std::string name;
  std::string help;
  MetricType type = MetricType::gauge;
  std::vector<Sample> samples;             // counter, gauge, untyped
  std::vector<HistogramSample> histograms; // histogram
};

// Appends families in the given order: # HELP, # TYPE, then samples. Families with
// no samples still get HELP/TYPE. Label values and HELP text are escaped per spec.
void render_text(const std::vector<MetricFamily> &families, std::string &out);
// The same, written to a stream.
void render_text(const std::vector<MetricFamily> &families, std::ostream &out);

inline constexpr const char *kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

// Builders for the exporters that turn state into families.
inline MetricFamily family(std::string name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

inline Labels with(Labels labels, std::string name, std::string value) {
  labels.emplace_back(std::move(name), std::move(value));
  return labels;
}

} // namespace neutracer
