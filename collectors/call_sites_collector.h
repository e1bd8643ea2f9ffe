// SPDX-License-Identifier: Apache-2.0
#pragma once
// Call sites: where each process allocates, waits, fails and launches, from the stacks its
// probed calls carry (stacks/site_recorder.h). The CUDA collector feeds the recorder as events
// and reads come; the detectors give it their leak samples; this one closes the scan and
// publishes the sites. With stacks off it holds no recorder and its counts stay 0.
#include <optional>

#include "collectors/collector.h"
#include "common/procfs.h"
#include "stacks/site_recorder.h"

namespace neutracer {

struct Config;

class CallSitesCollector final : public Collector {
public:
  // Stacks are recorded when the config turns them on and the tracer collects them.
  CallSitesCollector(const Config &config, StackMap &stacks);

  std::string_view name() const override { return "call_sites"; }
  bool scan() override;
  void write(MetricSink &sink) const override;
  void publish(PublishedSnapshot &snapshot) override;

  // The recorder the CUDA and detector collectors feed; null with stacks off.
  SiteRecorder *recorder() { return recorder_ ? &*recorder_ : nullptr; }

private:
  ProcFs procfs_;
  StackMap &stacks_;
  std::uint32_t launch_sample_every_;
  std::optional<SiteRecorder> recorder_;
};

} // namespace neutracer
