// SPDX-License-Identifier: Apache-2.0
#pragma once
// Turns per-process OS figures (/proc samples and BPF counters) into metric families. Pure.
#include <optional>
#include <vector>

#include "exporters/series_settings.h"
#include "exposition/exposition.h"
#include "exposition/metric_sink.h"
#include "os/os_sampler.h"
#include "os/os_tracing.h"

namespace neutracer {

struct OsProcessView {
  Labels labels;                       // pid, comm and, where known, container: built by the caller
  std::optional<ProcessOsSample> proc; // from /proc; nullopt omits the /proc-based series
  std::optional<OsCounters> bpf;       // from OsTracer; nullopt omits the BPF-based series
};

// Every neutracer_process_* family, in a fixed order, each with HELP and TYPE even when empty.
// Series of a process appear only for the sources it has; its IO latency histogram only once
// it did block IO, and only with `settings.process_histograms`.
void write_os_metrics(const std::vector<OsProcessView> &processes, const SeriesSettings &settings,
                      MetricSink &sink);
// The same families as values.
std::vector<MetricFamily> os_families(const std::vector<OsProcessView> &processes,
                                      const SeriesSettings &settings = {});

// neutracer_os_network_source{source}: which network hooks are loaded (1 for the one in use).
MetricFamily os_network_source_family(const OsTracerStats &stats);

} // namespace neutracer
