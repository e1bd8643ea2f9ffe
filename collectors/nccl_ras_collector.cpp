// SPDX-License-Identifier: Apache-2.0
#include "collectors/nccl_ras_collector.h"

#include <utility>

#include "config/config.h"
#include "exporters/nccl_ras_metrics.h"

namespace neutracer {

RasPollerSettings ras_poller_settings(const Config &config) {
  RasPollerSettings settings;
  settings.address = config.nccl.ras_address;
  settings.interval = config.nccl.ras_interval;
  settings.timeout = config.nccl.ras_timeout;
  return settings;
}

RasMonitorSettings ras_monitor_settings(const Config &config) {
  RasMonitorSettings settings;
  settings.address = config.nccl.ras_address;
  settings.answer_timeout = config.nccl.ras_timeout;
  return settings;
}

NcclRasCollector::NcclRasCollector(const RasPollerSettings &settings,
                                   const RasMonitorSettings &monitor, const NcclCollector &nccl,
                                   RasPoller::Query query)
    : nccl_(nccl), poller_(std::make_unique<RasPoller>(settings, std::move(query))),
      monitor_(std::make_unique<RasMonitor>(monitor)) {}

NcclRasCollector::~NcclRasCollector() {
  poller_->request_stop();
  monitor_->request_stop();
}

bool NcclRasCollector::scan() {
  const bool wanted = !nccl_.communicators().processes().empty();
  poller_->set_wanted(wanted);
  monitor_->set_wanted(wanted);
  snapshot_ = poller_->snapshot();
  events_ = monitor_->snapshot();
  return true; // a job without RAS is no failure of this daemon: neutracer_nccl_ras_up says
}

void NcclRasCollector::write(MetricSink &sink) const {
  write_nccl_ras_metrics(snapshot_, sink);
  write_nccl_ras_event_metrics(events_, sink);
}

} // namespace neutracer
