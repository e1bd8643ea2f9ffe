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

} // namespace neutracer::test
