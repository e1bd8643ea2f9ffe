// SPDX-License-Identifier: Apache-2.0
#pragma once
// The main loop: scan /proc, attach to new driver libraries, drain events, refresh counters,
// publish a snapshot for scrapes. Runs on one thread; HTTP threads only read snapshots.
#include <atomic>
#include <chrono>
#include <functional>
#include <map>

#include "common/journal_writer.h"
#include "common/process_image.h"
#include "common/procfs.h"
#include "config/config.h"
#include "containers/docker_names.h"
#include "containers/kubernetes_pods.h"
#include "cuda/cuda_state.h"
#include "cuda/cuda_tracing.h"
#include "cuda/launch_scheduler.h"
#include "cuda/memory_timeline.h"
#include "cuda/name_probe_keeper.h"
#include "daemon/fd_limit_warning.h"
#include "daemon/service_notifier.h"
#include "detectors/detector_set.h"
#include "detectors/device_headroom.h"
#include "exporters/bpf_map_metrics.h"
#include "exporters/cuda_metrics.h"
#include "exporters/detector_metrics.h"
#include "exporters/metrics_publisher.h"
#include "gpuhealth/gpu_health_monitor.h"
#include "gpus/host_gpus.h"
#include "nvml/nvml_sampler.h"
#include "os/os_sampler.h"
#include "os/os_tracing.h"
#include "stacks/site_recorder.h"

namespace neutracer {

class DaemonLoop {
public:
  // `journal` may be null: alerts then only reach metrics and /api/v1/alerts. `os_tracer` may
  // be null: OS metrics then come from /proc only.
  DaemonLoop(const Config &config, CudaTracing &tracer, MetricsPublisher &publisher,
             ServiceNotifier &notifier, JournalWriter *journal, OsTracing *os_tracer);

  // One scan and publish; run() repeats it every scan interval until `stop`, calling
  // `between_polls` (if set) at least every 100 ms: main reports received signals there.
  void scan_once();
  void run(const std::atomic<bool> &stop, const std::function<void()> &between_polls = {});

  // Samples GPU devices through `nvml` once per scan (it must outlive the loop). Without this
  // call (NVML disabled or not installed) no NVML series are exported.
  void use_nvml(NvmlApi &nvml) {
    nvml_.emplace(nvml, NvmlSampler::Settings{config_.scan_interval});
  }
  // NVML is enabled in the config but could not be loaded: the nvml collector reads 0.
  void nvml_unavailable() { nvml_unavailable_ = true; }
  // NVML's devices (index, UUID, minor number, PCI bus id); empty without NVML.
  const std::vector<NvmlDevice> &nvml_devices() const;

private:
  // Sets `out_of_descriptors` when an attach ran out of file descriptors.
  void attach_new_libraries(const DiscoveryResult &discovery, bool &out_of_descriptors);
  void report_fd_limit(const DiscoveryResult &discovery, bool attach_failed,
                       std::chrono::steady_clock::time_point now);
  // Exact mode: the raw in-kernel counts; adaptive and off: the scheduler's scaled totals.
  std::vector<LaunchCount> read_launch_counts();
  // Deletes the in-kernel entries of forgotten processes and drops them from this scan's reads.
  void forget(const std::vector<ProcessId> &removed, std::vector<LaunchCount> &launches,
              std::vector<InflightCall> &inflight);
  // Call sites: the scan's waits in progress and launch stacks, leak samples, exits.
  void record_sites(const std::vector<InflightCall> &inflight);
  void record_leak_samples();
  std::vector<NoticeSite> notice_sites_of(const ProcessId &id, AlertKind kind,
                                          std::uint64_t time_ns) const;
  void drain_events(std::chrono::milliseconds timeout);
  void forget_replaced_images(std::vector<LaunchCount> &launches,
                              std::vector<InflightCall> &inflight);
  void track_images();
  void read_visible_gpus();
  static std::optional<std::vector<std::string>>
  visible_gpus_of(const ProcFs &procfs, const std::vector<HostGpu> &host_gpus, const ProcessId &id);
  void sample_os();
  void run_detectors();
  void watch_gpu_health();
  void write_journal(const JournalEntry &entry);
  void publish();

  Config config_;
  ProcFs procfs_;
  CudaTracing &tracer_;
  MetricsPublisher &publisher_;
  ServiceNotifier &notifier_;
  JournalWriter *journal_;
  OsTracing *os_tracer_;
  std::map<int, ProcessOsSample> os_samples_;
  std::map<std::uint32_t, OsCounters> os_counters_;
  std::vector<HostGpu> host_gpus_; // read once at start; before state_, which uses it
  CudaState state_;
  DetectorSet detectors_;
  MemoryTimeline timeline_;
  KubernetesPodNames pod_names_;
  DockerContainerNames docker_names_; // names of containers outside Kubernetes
  AlertDelivery delivery_;
  DaemonHealth health_;
  FdLimitWarning fd_limit_warning_;
  std::size_t cuda_processes_ = 0;
  std::chrono::steady_clock::time_point last_tick_{};
  std::map<LibraryId, int> unused_scans_; // attached libraries no process maps, by scans unused
  // Of traced processes, to notice an exec.
  std::map<ProcessId, ProcessImage> images_;
  std::vector<BpfMapOccupancy> map_occupancy_;
  std::optional<NvmlSampler> nvml_;
  std::optional<LaunchScheduler> launches_; // launch probes per process (some not exact)
  // Launch probes system-wide (every process exact): cuKernelGetFunction probed per process.
  std::optional<NameProbeKeeper> name_probes_;
  double launch_trap_seconds_ = 0;               // measured cost of a counted launch; 0: unknown
  std::map<ProcessId, DeviceHeadroom> headroom_; // GPU free memory per process, last scan
  // Whether a process may still launch a kernel it has no name for (NameProbeKeeper).
  bool names_wanted(int pid) const;
  void track_launches_early(std::uint32_t tgid);
  void report_hot_entries(const std::string &path,
                          const std::vector<AttachSummary::HotEntry> &entries);
  std::set<int> early_misses_; // PIDs whose early lookup failed since the last scan
  NvmlSnapshot nvml_snapshot_; // the last scan's; not in use without NVML
  bool nvml_unavailable_ = false;
  GpuHealthMonitor gpu_health_;
  // /api/v1/kernels as last built (gzip), and the state's kernels_version it was built from.
  std::shared_ptr<const std::string> kernels_json_gzip_;
  std::uint64_t kernels_json_version_ = 0;
  std::size_t metrics_text_bytes_ = 0; // size of the last rendered /metrics text
  // Call sites (stacks.enabled): absent when stacks are off.
  std::optional<SiteRecorder> sites_;
  std::vector<LaunchStackCount> launch_stacks_; // this scan's read
  // (sampled, unfreed) of each process's leak samples when last given to sites_.
  std::map<ProcessId, std::pair<std::uint64_t, std::uint64_t>> leak_samples_seen_;
};

} // namespace neutracer
