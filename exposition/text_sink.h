// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Prometheus text exposition format 0.0.4, written as the series come: # HELP and # TYPE
// at each family, then its samples; label values and HELP text escaped per the spec and
// repaired to valid UTF-8.
#include <string>

#include "exposition/metric_sink.h"

namespace neutracer {

class TextSink final : public MetricSink {
public:
  explicit TextSink(std::string &out) : out_(out) {}

  void family(std::string_view name, std::string_view help, MetricType type) override;
  void sample(const Labels &common, std::initializer_list<LabelView> own, double value) override;
  // Cumulative _bucket lines, le="+Inf" (from `count`), then _sum and _count.
  void histogram(const Labels &common, std::initializer_list<LabelView> own,
                 const HistogramCounts &counts) override;
  using MetricSink::sample;

private:
  std::string &out_;
  std::string name_; // of the family being written
};

} // namespace neutracer
