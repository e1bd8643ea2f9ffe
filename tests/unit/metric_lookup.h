// SPDX-License-Identifier: Apache-2.0
#pragma once
// Finds families and label values in exporter output, for the metric tests.
#include <stdexcept>
#include <string>
#include <vector>

#include "exposition/exposition.h"

namespace neutracer::test {

inline const MetricFamily &family(const std::vector<MetricFamily> &families,
                                  const std::string &name) {
  for (const auto &f : families)
    if (f.name == name)
      return f;
  throw std::runtime_error("no family " + name);
}

// The value of label `name`, or "<absent>".
inline std::string label(const Labels &labels, const std::string &name) {
  for (const auto &[key, value] : labels)
    if (key == name)
      return value;
  return "<absent>";
}

// The value of the first sample of `name` whose labels include all of `labels`; -1 when none.
inline double value(const std::vector<MetricFamily> &families, const std::string &name,
                    const Labels &labels) {
  for (const auto &sample : family(families, name).samples) {
    bool all = true;
    for (const auto &[key, wanted] : labels)
      all = all && label(sample.labels, key) == wanted;
    if (all)
      return sample.value;
  }
  return -1;
}

} // namespace neutracer::test
