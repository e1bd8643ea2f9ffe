// SPDX-License-Identifier: Apache-2.0
#include "exposition/metric_sink.h"

#include <stdexcept>
#include <string>

namespace neutracer {
namespace {

Labels joined(const Labels &common, std::initializer_list<LabelView> own) {
  Labels labels;
  labels.reserve(common.size() + own.size());
  labels.insert(labels.end(), common.begin(), common.end());
  for (const auto &[name, value] : own)
    labels.emplace_back(std::string(name), std::string(value));
  return labels;
}

} // namespace

void MetricSink::write(const std::vector<MetricFamily> &families) {
  for (const auto &f : families) {
    family(f.name, f.help, f.type);
    if (f.type == MetricType::histogram) {
      for (const auto &h : f.histograms)
        histogram(h.labels, {}, {h.upper_bounds, h.bucket_counts, h.sum, h.count});
      continue;
    }
    for (const auto &s : f.samples)
      sample(s.labels, {}, s.value);
  }
}

void FamilySink::family(std::string_view name, std::string_view help, MetricType type) {
  families_.push_back(neutracer::family(std::string(name), std::string(help), type));
}

void FamilySink::sample(const Labels &common, std::initializer_list<LabelView> own, double value) {
  if (families_.empty())
    throw std::logic_error("FamilySink: a sample before its family");
  families_.back().samples.push_back({joined(common, own), value});
}

void FamilySink::histogram(const Labels &common, std::initializer_list<LabelView> own,
                           const HistogramCounts &counts) {
  if (families_.empty())
    throw std::logic_error("FamilySink: a histogram before its family");
  families_.back().histograms.push_back({joined(common, own),
                                         {counts.upper_bounds.begin(), counts.upper_bounds.end()},
                                         {counts.bucket_counts.begin(), counts.bucket_counts.end()},
                                         counts.sum,
                                         counts.count});
}

} // namespace neutracer
