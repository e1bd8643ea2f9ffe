// SPDX-License-Identifier: Apache-2.0
#include "daemon/daemon_collectors.h"

namespace neutracer {

DaemonCollectors::DaemonCollectors(const Config &config, const CollectorSources &sources)
    : journal_(sources.journal), call_sites_(config, sources.cuda),
      cuda_(cuda_collector_settings(config), sources.cuda, call_sites_.recorder()),
      nvml_(sources.nvml
                ? std::make_unique<NvmlCollector>(sources.nvml_api, config.scan_interval, cuda_)
                : nullptr),
      os_(config.proc_root, sources.os, SeriesSettings{config.metrics.process_histograms}, cuda_),
      gpu_health_(gpu_health_settings(config), cuda_, nvml_.get(), journal_),
      allocator_(allocator_collector_settings(config), sources.cuda, cuda_, call_sites_.recorder()),
      nccl_(nccl_collector_settings(config), cuda_, call_sites_.recorder(), journal_),
      nccl_ras_(config.nccl.enabled && config.nccl.ras_enabled
                    ? std::make_unique<NcclRasCollector>(ras_poller_settings(config),
                                                         ras_monitor_settings(config), nccl_)
                    : nullptr),
      detectors_(detector_settings(config), cuda_, os_, nvml_.get(), call_sites_.recorder(),
                 journal_, &allocator_),
      bpf_maps_(sources.os, cuda_) {
  cuda_.use_journal(journal_);
  cuda_.use_block_sink(allocator_);
  cuda_.use_nccl_sink(nccl_);
  if (nvml_)
    cuda_.use_gpu_saturation([this](int pid) { return nvml_->saturated(pid); });
}

std::vector<Collector *> DaemonCollectors::in_order() {
  std::vector<Collector *> list{&cuda_};
  if (nvml_)
    list.push_back(nvml_.get());
  list.insert(list.end(), {&os_, &gpu_health_, &allocator_, &nccl_});
  if (nccl_ras_)
    list.push_back(nccl_ras_.get());
  list.insert(list.end(), {&detectors_, &call_sites_, &bpf_maps_});
  return list;
}

} // namespace neutracer
