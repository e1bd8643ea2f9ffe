// SPDX-License-Identifier: Apache-2.0
#pragma once
// The detectors (leak, fragmentation, OOM, hang) over the CUDA state, the memory timelines
// drawn on /memory, and the journal entries of alerts and of processes that exit holding
// GPU memory.
#include <map>
#include <utility>

#include "collectors/allocator_collector.h"
#include "collectors/collector.h"
#include "collectors/counted_journal.h"
#include "collectors/cuda_collector.h"
#include "collectors/nvml_collector.h"
#include "collectors/os_collector.h"
#include "cuda/memory_timeline.h"
#include "detectors/detector_set.h"
#include "exporters/detector_metrics.h"
#include "stacks/site_recorder.h"

namespace neutracer {

struct Config;
// The config's detectors.* and alerts.* keys.
DetectorSettings detector_settings(const Config &config);

class DetectorCollector final : public Collector {
public:
  // `nvml` null: no GPU free memory (detectors work from the process alone); `sites` null:
  // call stacks off (alerts name no code).
  // `allocator` null: no allocator view (leaks are judged and named from the driver view).
  DetectorCollector(const DetectorSettings &settings, const CudaCollector &cuda,
                    const OsCollector &os, const NvmlCollector *nvml, SiteRecorder *sites,
                    CountedJournal &journal, const AllocatorCollector *allocator = nullptr);

  std::string_view name() const override { return "detectors"; }
  bool scan() override;
  void write(MetricSink &sink) const override;
  void publish(PublishedSnapshot &snapshot) override;

private:
  void record_leak_samples();
  void note_exits();
  // The leak's sites as the allocator view ranks them (live tensor bytes that survived a step);
  // empty when it has no view of the process or no survivors.
  std::vector<NoticeSite> allocator_leak_sites(const ProcessId &id) const;
  std::vector<NoticeSite> notice_sites_of(const ProcessId &id, AlertKind kind,
                                          std::uint64_t time_ns) const;

  DetectorSet detectors_;
  const CudaCollector &cuda_;
  const OsCollector &os_;
  const NvmlCollector *nvml_;
  SiteRecorder *sites_;
  CountedJournal &journal_;
  const AllocatorCollector *allocator_;
  MemoryTimeline timeline_;
  AlertDelivery delivery_;
  std::map<ProcessId, DeviceHeadroom> headroom_; // GPU free memory per process, last scan
  // (sampled, unfreed) of each process's leak samples when last given to sites_.
  std::map<ProcessId, std::pair<std::uint64_t, std::uint64_t>> leak_samples_seen_;
};

} // namespace neutracer
