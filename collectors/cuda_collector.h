// SPDX-License-Identifier: Apache-2.0
#pragma once
// The CUDA processes: discovery, probes on their driver files, call events, launch counts and
// the state built from them (cuda/cuda_state.h). Other collectors read its state; it comes first.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collectors/collector.h"
#include "collectors/counted_journal.h"
#include "collectors/fd_limit_warning.h"
#include "common/process_image.h"
#include "common/procfs.h"
#include "containers/docker_names.h"
#include "containers/kubernetes_pods.h"
#include "cuda/event_sinks.h"
#include "cuda/cuda_state.h"
#include "cuda/cuda_tracer.h"
#include "cuda/cuda_tracing.h"
#include "cuda/launch_probes.h"
#include "cuda/library_attacher.h"
#include "exporters/bpf_map_metrics.h"
#include "exporters/cuda_metrics.h"
#include "exporters/series_settings.h"
#include "gpus/host_gpus.h"
#include "stacks/site_recorder.h"

namespace neutracer {

struct Config;

struct CudaCollectorSettings {
  std::string proc_root = "/proc";
  std::uint32_t max_kernels_per_process = 0;
  double throughput_window_seconds = 10;
  LaunchProbeSettings launches;
  SeriesSettings series;
  std::string kubernetes_log_dir;
  std::size_t max_connections = 0; // of the HTTP server: a bound on its descriptors
  bool nccl = true;                 // probe the NCCL libraries traced processes map
};
// The config's cuda.*, metrics.*, kubernetes.*, web.max_connections and nccl.enabled keys.
CudaCollectorSettings cuda_collector_settings(const Config &config);
// The tracer's: map and ring buffer sizes, stacks.*, and whether launch probes go per process.
TracerSettings cuda_tracer_settings(const Config &config);

class CudaCollector final : public Collector, public EventSource {
public:
  // `sites` (null: call stacks off) records each call's stack as its event arrives.
  CudaCollector(const CudaCollectorSettings &settings, CudaTracing &tracer, SiteRecorder *sites);

  std::string_view name() const override { return "cuda"; }
  bool scan() override;
  void write(MetricSink &sink) const override;
  void publish(PublishedSnapshot &snapshot) override;
  std::vector<SourceUp> sources() const override { return {{"cuda_tracer", true}}; }
  std::size_t bytes_released() const override { return name_bytes_released_; }

  // Applies the call events that arrived, waiting up to `timeout` for the first.
  void drain_events(std::chrono::milliseconds timeout) override;
  // Opens and closes the sampled launch windows that are due.
  std::uint64_t tick() override { return launch_probes_.tick(); }
  // `saturated(pid)`: every GPU the process uses was busy at the last sample (NVML).
  void use_gpu_saturation(std::function<bool(int)> saturated) {
    gpu_saturated_ = std::move(saturated);
  }
  // Where the allocator view's tensor block events go; without one they are dropped.
  void use_block_sink(BlockEventSink &sink) { block_sink_ = &sink; }
  // NCCL call events go to `sink` (the NCCL collector); dropped when none is set.
  void use_nccl_sink(NcclEventSink &sink) { nccl_sink_ = &sink; }
  // Where running out of file descriptors is written, besides the log (at most once a minute).
  void use_journal(CountedJournal &journal) { journal_ = &journal; }

  const CudaState &state() const { return state_; }
  const std::vector<HostGpu> &host_gpus() const { return host_gpus_; }
  // What this scan took from the state for the detectors: memory changes by process and the
  // processes that exited.
  const std::map<ProcessId, std::vector<MemoryChange>> &memory_changes() const { return changes_; }
  const std::vector<ExitedProcess> &exited() const { return exited_; }
  // Launch and in-flight map entries read this scan, against their capacity.
  const std::vector<BpfMapOccupancy> &map_occupancy() const { return map_occupancy_; }
  // The BPF side's counters of lost events and full maps, read this scan.
  const TracerStats &tracer_stats() const { return stats_; }

private:
  using LaunchCounts = std::vector<LaunchCount>;
  using InflightCalls = std::vector<InflightCall>;
  DiscoveryResult discover();
  void forget(const std::vector<ProcessId> &removed, LaunchCounts &launches,
              InflightCalls &inflight);
  void forget_replaced_images(LaunchCounts &launches, InflightCalls &inflight);
  void track_images();
  void record_sites(const InflightCalls &inflight);
  void read_visible_gpus();
  void report_fd_limit(const DiscoveryResult &discovery, bool attach_failed, bool put_off);
  void count_processes(const DiscoveryResult &discovery);

  CudaCollectorSettings settings_;
  ProcFs procfs_;
  CudaTracing &tracer_;
  SiteRecorder *sites_;
  std::vector<HostGpu> host_gpus_; // read once at start; before state_, which uses it
  CudaState state_;
  std::function<bool(int)> gpu_saturated_;
  LibraryAttacher attacher_;
  LaunchProbes launch_probes_;
  KubernetesPodNames pod_names_;
  DockerContainerNames docker_names_; // names of containers outside Kubernetes
  FdLimitWarning fd_limit_warning_;
  CountedJournal *journal_ = nullptr;
  BlockEventSink *block_sink_ = nullptr;
  NcclEventSink *nccl_sink_ = nullptr;
  std::map<ProcessId, ProcessImage> images_;    // of traced processes, to notice an exec
  bool images_put_off_ = false;                 // this scan left some unopened: descriptors
  std::uint64_t attaches_put_off_ = 0;          // the tracer's count at the last scan
  std::vector<LaunchStackCount> launch_stacks_; // this scan's read
  std::vector<BpfMapOccupancy> map_occupancy_;
  std::map<ProcessId, std::vector<MemoryChange>> changes_;
  std::vector<ExitedProcess> exited_;
  TracerStats stats_;
  TracerHealth health_;
  std::chrono::steady_clock::time_point last_tick_{};
  std::size_t name_bytes_released_ = 0;
  // /api/v1/kernels as last built (gzip), and the state's kernels_version it was built from.
  std::shared_ptr<const std::string> kernels_json_gzip_;
  std::uint64_t kernels_json_version_ = 0;
};

} // namespace neutracer
