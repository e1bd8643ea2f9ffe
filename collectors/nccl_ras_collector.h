// SPDX-License-Identifier: Apache-2.0
#pragma once
// NCCL's RAS status and events (docs/nccl.md, "RAS"), when nccl.ras_enabled asks for them:
// tells the poller and the event monitor whether this node runs NCCL processes (they ask nobody
// otherwise), takes their latest state at each scan without waiting, and writes the
// neutracer_nccl_ras_* series. Comes after the NCCL collector.
#include <memory>

#include "collectors/collector.h"
#include "collectors/nccl_collector.h"
#include "nccl/ras_monitor.h"
#include "nccl/ras_poller.h"

namespace neutracer {

struct Config;

// The config's nccl.ras_* keys.
RasPollerSettings ras_poller_settings(const Config &config);
RasMonitorSettings ras_monitor_settings(const Config &config);

class NcclRasCollector final : public Collector {
public:
  // `query` stands in for the network in tests.
  NcclRasCollector(const RasPollerSettings &settings, const RasMonitorSettings &monitor,
                   const NcclCollector &nccl, RasPoller::Query query = query_ras_status);

  // Stops both threads at once (a query under way takes up to nccl.ras_timeout).
  ~NcclRasCollector() override;
  NcclRasCollector(const NcclRasCollector &) = delete;
  NcclRasCollector &operator=(const NcclRasCollector &) = delete;

  std::string_view name() const override { return "nccl_ras"; }
  bool scan() override;
  void write(MetricSink &sink) const override;

private:
  const NcclCollector &nccl_;
  RasSnapshot snapshot_;
  RasMonitorSnapshot events_;
  // Last: their threads stop before the rest goes.
  std::unique_ptr<RasPoller> poller_;
  std::unique_ptr<RasMonitor> monitor_;
};

} // namespace neutracer
