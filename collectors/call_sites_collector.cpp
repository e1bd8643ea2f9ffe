// SPDX-License-Identifier: Apache-2.0
#include "collectors/call_sites_collector.h"

#include <algorithm>
#include <unistd.h>

#include "config/config.h"
#include "exporters/call_site_metrics.h"

namespace neutracer {

CallSitesCollector::CallSitesCollector(const Config &config, StackMap &stacks)
    : procfs_(config.proc_root), stacks_(stacks),
      launch_sample_every_(config.stacks.launch_sample_every) {
  if (!config.stacks.enabled || stacks.stack_depth() == 0)
    return;
  SiteRecorderSettings settings;
  settings.sites.max_sites_per_process = config.stacks.max_sites_per_process;
  settings.sites.max_sites = config.stacks.max_sites;
  settings.ns_per_tick =
      1'000'000'000ull / static_cast<std::uint64_t>(std::max(1L, sysconf(_SC_CLK_TCK)));
  recorder_.emplace(stacks, procfs_, settings);
}

bool CallSitesCollector::scan() {
  if (recorder_)
    recorder_->end_scan();
  return true;
}

void CallSitesCollector::write(MetricSink &sink) const {
  sink.write(call_site_families(recorder_ ? recorder_->sites().total_stack_sites() : 0,
                                recorder_ ? recorder_->python_stacks_rejected() : 0));
}

void CallSitesCollector::publish(PublishedSnapshot &snapshot) {
  if (!recorder_)
    return;
  snapshot.sites =
      std::make_shared<const std::map<ProcessId, std::shared_ptr<const ProcessSitesView>>>(
          recorder_->views());
  snapshot.stacks = {true, stacks_.stack_depth(), launch_sample_every_};
}

} // namespace neutracer
