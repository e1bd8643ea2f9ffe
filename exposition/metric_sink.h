// SPDX-License-Identifier: Apache-2.0
#pragma once
// Where exporters write series as they go, a family at a time: straight into text (TextSink,
// text_sink.h: the daemon's /metrics, with no Sample or label vector per series: at 1 000
// processes those took more memory than the text) or into MetricFamily values (FamilySink:
// tests, and families amended before they are rendered). One exporter, either destination.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "exposition/exposition.h"

namespace neutracer {

using LabelView = std::pair<std::string_view, std::string_view>;

// The numbers of one histogram series, borrowed from wherever they are kept: as in
// HistogramSample, bucket_counts[i] counts (upper_bounds[i-1], upper_bounds[i]], not cumulative.
struct HistogramCounts {
  std::span<const double> upper_bounds;
  std::span<const std::uint64_t> bucket_counts;
  double sum = 0;
  std::uint64_t count = 0;
};

class MetricSink {
public:
  virtual ~MetricSink() = default;
  // Starts a family; the samples that follow belong to it, up to the next call.
  virtual void family(std::string_view name, std::string_view help, MetricType type) = 0;
  // One sample labelled `common` (a process's labels, say) and then `own`.
  virtual void sample(const Labels &common, std::initializer_list<LabelView> own, double value) = 0;
  // One histogram series, as HistogramSample describes it.
  virtual void histogram(const Labels &common, std::initializer_list<LabelView> own,
                         const HistogramCounts &counts) = 0;

  void sample(const Labels &labels, double value) { sample(labels, {}, value); }
  // Each family in turn, samples and histograms alike.
  void write(const std::vector<MetricFamily> &families);
};

// Collects what it is given as MetricFamily values.
class FamilySink final : public MetricSink {
public:
  void family(std::string_view name, std::string_view help, MetricType type) override;
  void sample(const Labels &common, std::initializer_list<LabelView> own, double value) override;
  void histogram(const Labels &common, std::initializer_list<LabelView> own,
                 const HistogramCounts &counts) override;
  using MetricSink::sample;

  std::vector<MetricFamily> take() { return std::move(families_); }

private:
  std::vector<MetricFamily> families_;
};

} // namespace neutracer
