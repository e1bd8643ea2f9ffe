// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which optional per-process series the exporters write (config `metrics:`), so a fleet can
// trade detail for series.
namespace neutracer {

struct SeriesSettings {
  // Per-process histograms: CUDA sync wait durations (17 series per synchronising API) and
  // block IO latency (26 series once the process did block IO). Off keeps their _total sums.
  bool process_histograms = true;
};

} // namespace neutracer
