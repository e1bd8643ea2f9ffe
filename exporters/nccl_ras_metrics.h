// SPDX-License-Identifier: Apache-2.0
#pragma once
// The series of NCCL's RAS status (docs/nccl.md, "RAS"; docs/metrics.md): polls by result, and
// from the last poll that was answered, per communicator of the job, its ranks by state, the
// ranks with errors, the spread of collective counts among its ranks and each missing rank.
// Job-wide, so bounded: kRasMaxCommunicators communicators and kRasMaxMissingRanks missing
// ranks, the rest counted in neutracer_nccl_ras_series_dropped. Without a status, those
// families are written without samples.
#include <cstddef>

#include "exposition/metric_sink.h"
#include "nccl/ras_monitor.h"
#include "nccl/ras_poller.h"

namespace neutracer {

inline constexpr std::size_t kRasMaxCommunicators = 256;
inline constexpr std::size_t kRasMaxMissingRanks = 256;

void write_nccl_ras_metrics(const RasSnapshot &snapshot, MetricSink &sink);
// The event stream's series: whether it is followed, events by kind, this job's dead processes.
void write_nccl_ras_event_metrics(const RasMonitorSnapshot &events, MetricSink &sink);

} // namespace neutracer
