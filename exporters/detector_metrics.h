// SPDX-License-Identifier: Apache-2.0
#pragma once
// Turns detector findings and alert delivery counts into metric families. Pure.
#include <cstdint>
#include <vector>

#include "detectors/detector_set.h"
#include "exposition/exposition.h"
#include "exposition/metric_sink.h"

namespace neutracer {

struct AlertDelivery {
  std::uint64_t journal_errors = 0;        // entries journald did not take
  std::uint64_t exited_holding_memory = 0; // processes that exited holding GPU memory
  std::uint64_t bytes_held_at_exit = 0;    // their GPU bytes, summed
};

void write_detector_metrics(const DetectorSet &detectors, const AlertDelivery &delivery,
                            MetricSink &sink);
// The same families as values.
std::vector<MetricFamily> detector_families(const DetectorSet &detectors,
                                            const AlertDelivery &delivery);

} // namespace neutracer
