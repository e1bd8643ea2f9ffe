// SPDX-License-Identifier: Apache-2.0
#pragma once
// PyTorch's allocator view (docs/allocator-view.md): opens on processes whose device memory
// keeps rising (or that an operator names), attaches the caching allocator's tracepoint probes
// to them alone for a bounded time, keeps their sampled tensor blocks and live bytes per call
// site, and says whether live tensor bytes keep rising. The detectors read its verdicts and
// rankings; it comes after the CUDA collector and before them.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "allocator/allocator_view.h"
#include "allocator/investigation.h"
#include "allocator/torch_allocator_probes.h"
#include "collectors/collector.h"
#include "collectors/cuda_collector.h"
#include "common/proc_parsers.h"
#include "common/procfs.h"
#include "cuda/event_sinks.h"
#include "cuda/cuda_tracing.h"
#include "exporters/allocator_metrics.h"
#include "stacks/site_recorder.h"

namespace neutracer {

struct Config;

struct AllocatorCollectorSettings {
  bool enabled = true;
  InvestigationSettings investigations;
  BlockLedgerSettings ledger;
  LiveBytesTrendSettings trend;
  std::string proc_root = "/proc";
};
// The config's allocator.* keys.
AllocatorCollectorSettings allocator_collector_settings(const Config &config);

class AllocatorCollector final : public Collector, public BlockEventSink {
public:
  // `sites` null: call stacks off (blocks are kept without sites).
  AllocatorCollector(const AllocatorCollectorSettings &settings, CudaTracing &tracer,
                     const CudaCollector &cuda, SiteRecorder *sites);
  ~AllocatorCollector() override;

  std::string_view name() const override { return "allocator"; }
  bool scan() override;
  void write(MetricSink &sink) const override;
  void publish(PublishedSnapshot &snapshot) override;

  void block(const ProcessId &id, const nt_block_event &event) override;

  // Asks for a view of `pid` at the next scan (from the HTTP threads). False when the view is
  // off in the config.
  bool request(int pid);

  const std::map<ProcessId, AllocatorView> &views() const { return views_; }
  const AllocatorView *view(const ProcessId &id) const;
  // Processes whose open view finds live tensor bytes rising, with the growth in bytes/s.
  std::map<ProcessId, double> rising() const;

private:
  struct Failure {
    AllocatorViewFailure kind;
    std::string reason;
  };
  // Attaches; nullopt on success.
  std::optional<Failure> open_view(const ProcessId &id, InvestigationReason reason,
                                   std::uint64_t now_ns);
  void close_view(const ProcessId &id, std::uint64_t now_ns);
  // libc10_cuda.so as `pid` maps it; nullopt if it maps none.
  std::optional<MapsEntry> torch_library(int pid) const;
  // Whether that file has the probes (its notes read once per file).
  const TorchAllocatorProbes &probes_of(const MapsEntry &library, const std::string &openable_path);
  void take_requests(std::uint64_t now_ns);
  void forget_exited();

  AllocatorCollectorSettings settings_;
  CudaTracing &tracer_;
  const CudaCollector &cuda_;
  SiteRecorder *sites_;
  ProcFs procfs_;
  Investigations investigations_;
  std::map<ProcessId, AllocatorView> views_;
  // By (device, inode) of the file, bounded.
  std::map<std::pair<std::uint64_t, std::uint64_t>, TorchAllocatorProbes> probes_cache_;
  AllocatorViewCounts counts_;
  std::mutex requests_mutex_;
  std::vector<int> requests_; // pids asked for through the API, taken at the next scan
};

} // namespace neutracer
