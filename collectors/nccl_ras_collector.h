// SPDX-License-Identifier: Apache-2.0
#pragma once
// NCCL's RAS status (docs/nccl.md, "RAS"), when nccl.ras_enabled asks for it: tells the poller
// whether this node runs NCCL processes (it asks nobody otherwise), takes its latest answer at
// each scan without waiting, and writes the neutracer_nccl_ras_* series. Comes after the NCCL
// collector.
#include <memory>

#include "collectors/collector.h"
#include "collectors/nccl_collector.h"
#include "nccl/ras_poller.h"

namespace neutracer {

struct Config;

// The config's nccl.ras_* keys.
RasPollerSettings ras_poller_settings(const Config &config);

class NcclRasCollector final : public Collector {
public:
  // `query` stands in for the network in tests.
  NcclRasCollector(const RasPollerSettings &settings, const NcclCollector &nccl,
                   RasPoller::Query query = query_ras_status);

  std::string_view name() const override { return "nccl_ras"; }
  bool scan() override;
  void write(MetricSink &sink) const override;

private:
  const NcclCollector &nccl_;
  RasSnapshot snapshot_;
  std::unique_ptr<RasPoller> poller_; // last: its thread stops before the rest goes
};

} // namespace neutracer
