// SPDX-License-Identifier: Apache-2.0
#include "collectors/cuda_collector.h"

#include <algorithm>
#include <set>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/descriptor_reserve.h"
#include "common/monotonic_clock.h"
#include "common/open_file_limit.h"
#include "common/proc_parsers.h"
#include "config/config.h"
#include "exporters/container_metrics.h"
#include "exporters/kernel_name_metrics.h"
#include "exporters/kernels_json.h"
#include "exporters/launch_metrics.h"
#include "gpus/visible_gpus.h"

namespace neutracer {
namespace {

// Kernel name bytes released in one scan (about as much again in series and the kernels
// document) above which freed heap memory is returned to the OS.
constexpr std::size_t kTrimAfterReleasedNameBytes = std::size_t{1} << 20;

// The GPUs a process may use, by CUDA_VISIBLE_DEVICES in its environment.
std::optional<std::vector<std::string>>
visible_gpus_of(const ProcFs &procfs, const std::vector<HostGpu> &host_gpus, const ProcessId &id) {
  // The PID must still be this process: a reused PID's environment is another's.
  if (process_start_ticks(procfs, id.pid) != id.start_ticks)
    return std::nullopt;
  const auto environ = procfs.read(id.pid, "environ");
  if (!environ)
    return std::nullopt;
  return visible_gpu_labels(*environ, host_gpus);
}

} // namespace

CudaCollectorSettings cuda_collector_settings(const Config &config) {
  CudaCollectorSettings settings;
  settings.proc_root = config.proc_root;
  settings.max_kernels_per_process = config.cuda.max_kernels_per_process;
  settings.throughput_window_seconds = in_seconds(config.cuda.throughput_window);
  auto &launches = settings.launches;
  launches.mode = config.cuda.launch_counting;
  for (const auto &[pattern, mode] : config.cuda.launch_rules)
    launches.rules.push_back({pattern, mode});
  launches.sampling.max_rate = config.cuda.launch_max_rate;
  launches.sampling.period_ns = static_cast<std::uint64_t>(
      std::chrono::nanoseconds(config.cuda.launch_sample_period).count());
  launches.sampling.fixed_fraction = config.cuda.launch_sample_fraction;
  settings.series = SeriesSettings{config.metrics.process_histograms};
  settings.kubernetes_log_dir = config.kubernetes.log_dir;
  settings.max_connections = config.web.max_connections;
  settings.nccl = config.nccl.enabled;
  return settings;
}

TracerSettings cuda_tracer_settings(const Config &config) {
  TracerSettings tracing;
  tracing.launch_map_entries = config.cuda.launch_map_entries;
  tracing.ring_buffer_bytes = config.cuda.ring_buffer_bytes;
  tracing.allocator_sample_bytes = config.allocator.sample_bytes;
  // Launch probes go per process only where some process is sampled or not counted: exact
  // counting of every process probes the driver files system-wide, from a process's start.
  tracing.per_process_launch_probes = !cuda_collector_settings(config).launches.all_exact();
  if (config.stacks.enabled) {
    tracing.stack_depth = config.stacks.max_depth;
    tracing.stack_map_entries = config.stacks.map_entries;
    tracing.launch_stack_every = config.stacks.launch_sample_every;
  }
  return tracing;
}

CudaCollector::CudaCollector(const CudaCollectorSettings &settings, CudaTracing &tracer,
                             SiteRecorder *sites)
    : settings_(settings), procfs_(settings.proc_root), tracer_(tracer), sites_(sites),
      host_gpus_(read_host_gpus(settings.proc_root)),
      state_(CudaState::Settings{
          settings.max_kernels_per_process, settings.throughput_window_seconds,
          sysconf(_SC_CLK_TCK),
          [this](const ProcessId &id) { return visible_gpus_of(procfs_, host_gpus_, id); }}),
      attacher_(tracer),
      launch_probes_(settings.launches, tracer, procfs_, state_,
                     [this](int pid) { return gpu_saturated_ && gpu_saturated_(pid); }),
      pod_names_(settings.kubernetes_log_dir) {
  for (const auto &gpu : host_gpus_)
    spdlog::info("GPU {}: {} at {}", gpu.index, gpu.uuid, gpu.pci_bus_id);
}

DiscoveryResult CudaCollector::discover() {
  std::vector<int> traced;
  for (const auto &[id, process] : state_.processes())
    traced.push_back(id.pid);
  auto discovery = discover_cuda_processes(procfs_, traced);
  // The daemon maps libcuda itself once NVML is loaded: it never traces itself.
  std::erase_if(discovery.processes,
                [self = static_cast<int>(getpid())](const auto &p) { return p.id.pid == self; });
  if (!settings_.nccl)
    std::erase_if(discovery.libraries,
                  [](const CudaLibrary &library) { return library.kind == LibraryKind::nccl; });
  pod_names_.resolve(discovery.processes);
  docker_names_.resolve(discovery.processes);
  return discovery;
}

bool CudaCollector::scan() {
  const FdLimitWatch scan_reads(procfs_);
  const auto discovery = discover();
  const bool attach_out_of_descriptors = attacher_.update(discovery);
  launch_probes_.update(discovery);
  // Names and allocations that arrived before now are applied before counts are joined.
  drain_events(std::chrono::milliseconds(0));
  auto launches = launch_probes_.read();
  auto inflight = tracer_.read_inflight_calls();
  if (sites_)
    launch_stacks_ = tracer_.read_launch_stacks();
  // Counted from the full reads the scan makes anyway: no extra syscalls.
  map_occupancy_ = {{"launches", launches.size(), tracer_.launch_map_max_entries()},
                    {"inflight", inflight.size(), tracer_.inflight_map_max_entries()}};
  const auto name_bytes = state_.kernel_name_bytes();
  forget_replaced_images(launches, inflight);
  state_.set_launch_counts(launches);
  state_.set_estimated_launches(launch_probes_.estimated());
  state_.set_inflight_calls(inflight, monotonic_ns());
  // A process this scan could not read, or whose stat it could not open for lack of
  // descriptors, is alive as far as anyone knows: an exit here would wipe a live one's state.
  const auto removed = state_.update_processes(discovery, [&](const ProcessId &id) {
    if (discovery.unknown(id.pid))
      return true;
    if (discovery.seen_gone(id.pid)) // its stat cannot be opened either: EMFILE comes first
      return false;
    const FdLimitWatch reading(procfs_);
    const auto start_ticks = process_start_ticks(procfs_, id.pid);
    return start_ticks == id.start_ticks || (!start_ticks && reading.hit());
  });
  forget(removed, launches, inflight);
  record_sites(inflight);
  // Megabytes at 1 000 processes (a full read of each map): freed before the snapshot is
  // built, not held through it.
  LaunchCounts().swap(launches);
  InflightCalls().swap(inflight);
  track_images();
  read_visible_gpus();
  changes_ = state_.take_memory_changes();
  exited_ = state_.take_exited();
  const auto now = std::chrono::steady_clock::now();
  if (last_tick_ != std::chrono::steady_clock::time_point{})
    state_.tick(std::chrono::duration<double>(now - last_tick_).count());
  last_tick_ = now;
  count_processes(discovery);
  // Put off here or between scans (a process's first calls attach its probes at once).
  const bool put_off = tracer_.attaches_put_off() != attaches_put_off_ || images_put_off_;
  attaches_put_off_ = tracer_.attaches_put_off();
  if (scan_reads.hit() || attach_out_of_descriptors || put_off)
    report_fd_limit(discovery, attach_out_of_descriptors, put_off);
  else if (const auto line = fd_limit_warning_.clear())
    spdlog::info("{}", *line);
  const auto kept = state_.kernel_name_bytes();
  name_bytes_released_ =
      kept < name_bytes && name_bytes - kept >= kTrimAfterReleasedNameBytes ? name_bytes - kept : 0;
  return true;
}

void CudaCollector::drain_events(std::chrono::milliseconds timeout) {
  tracer_.poll(timeout, [this](std::span<const std::byte> bytes) {
    if (auto event = decode_event(bytes)) {
      launch_probes_.seen(std::visit([](const auto &e) { return e.tgid; }, *event));
      if (const auto *block = std::get_if<nt_block_event>(&*event)) {
        if (block_sink_)
          block_sink_->block(state_.process_id(block->tgid, block->proc_start_ns), *block);
        return;
      }
      if (const auto *call = std::get_if<nt_nccl_event>(&*event)) {
        if (nccl_sink_)
          nccl_sink_->nccl_call(state_.process_id(call->tgid, call->call.proc_start_ns), *call);
        return;
      }
      state_.apply(*event);
      // At once, while the process runs: a new stack is named from its maps.
      if (const auto *call = std::get_if<nt_call_event>(&*event); call && sites_)
        sites_->record(state_.process_id(call->tgid, call->proc_start_ns), *call);
    } else {
      ++health_.malformed_events;
    }
  });
}

// Deletes the in-kernel entries of forgotten processes and drops them from this scan's reads.
void CudaCollector::forget(const std::vector<ProcessId> &removed, LaunchCounts &launches,
                           InflightCalls &inflight) {
  if (removed.empty())
    return;
  const std::set<ProcessId> gone(removed.begin(), removed.end());
  for (const auto &id : removed)
    launch_probes_.forget_counts(id.pid);
  const auto kept = [&](const auto &entry) {
    return !gone.contains(state_.process_id(entry.tgid, entry.proc_start_ns));
  };
  const auto stale_launches = std::stable_partition(launches.begin(), launches.end(), kept);
  tracer_.delete_launch_counts({stale_launches, launches.end()});
  const auto gone_process = [&](std::uint32_t tgid, std::uint64_t proc_start_ns) {
    return gone.contains(state_.process_id(tgid, proc_start_ns));
  };
  tracer_.forget_kernel_functions(gone_process);
  tracer_.forget_nccl_calls(gone_process);
  launches.erase(stale_launches, launches.end());
  const auto stale_calls = std::stable_partition(inflight.begin(), inflight.end(), kept);
  tracer_.delete_inflight_calls({stale_calls, inflight.end()});
  inflight.erase(stale_calls, inflight.end());
  const auto stale_stacks =
      std::stable_partition(launch_stacks_.begin(), launch_stacks_.end(), kept);
  tracer_.delete_launch_stacks({stale_stacks, launch_stacks_.end()});
  launch_stacks_.erase(stale_stacks, launch_stacks_.end());
  if (sites_)
    for (const auto &id : removed)
      sites_->forget(id);
}

// An exec keeps the PID and start time but starts a new image: the old image's memory, kernels
// and calls must not carry over. Whatever the new image did before this scan noticed it is
// dropped with them (never counted twice; the BPF keys cannot tell the two images apart).
void CudaCollector::forget_replaced_images(LaunchCounts &launches, InflightCalls &inflight) {
  std::vector<ProcessId> replaced, exited;
  for (auto it = images_.begin(); it != images_.end();) {
    if (!it->second.replaced()) {
      ++it;
      continue;
    }
    // The same PID and start time still there: an exec, not an exit.
    const auto &id = it->first;
    (process_start_ticks(procfs_, id.pid) == id.start_ticks ? replaced : exited).push_back(id);
    it = images_.erase(it);
  }
  for (const auto &id : replaced)
    spdlog::debug("pid {} exec'd a new program: its CUDA state starts over", id.pid);
  state_.forget_images(replaced, true);
  state_.forget_images(exited);
  replaced.insert(replaced.end(), exited.begin(), exited.end());
  if (replaced.empty())
    return;
  forget(replaced, launches, inflight);
}

void CudaCollector::track_images() {
  std::erase_if(images_,
                [&](const auto &entry) { return !state_.processes().contains(entry.first); });
  images_put_off_ = false;
  std::optional<DescriptorReserve> reserve; // one descriptor per process: as the tracer's links
  for (const auto &[id, process] : state_.processes()) {
    if (!process.discovered || images_.contains(id))
      continue;
    if (!reserve)
      reserve.emplace();
    if (!reserve->full()) {
      images_put_off_ = true; // opened at a later scan
      break;
    }
    if (auto image = ProcessImage::open(procfs_, id.pid))
      images_.emplace(id, std::move(*image));
  }
}

// Call sites: the scan's waits in progress and launch stacks.
void CudaCollector::record_sites(const InflightCalls &inflight) {
  if (!sites_)
    return;
  const auto process_of = [this](std::uint32_t tgid, std::uint64_t proc_start_ns) {
    return state_.process_id(tgid, proc_start_ns);
  };
  std::vector<ProcessId> traced;
  for (const auto &[id, process] : state_.processes())
    if (process.discovered)
      traced.push_back(id);
  sites_->update_python_processes(traced);
  sites_->set_inflight(inflight, monotonic_ns(), process_of);
  sites_->set_launch_stacks(launch_stacks_, process_of);
}

void CudaCollector::read_visible_gpus() {
  for (const auto &id : state_.processes_without_visible_gpus()) {
    const FdLimitWatch reading(procfs_);
    auto labels = visible_gpus_of(procfs_, host_gpus_, id);
    if (!labels && reading.hit()) // not read for lack of descriptors: the next scan reads it
      continue;
    // Unreadable (exited, hidden): the ordinal stays the label.
    state_.set_visible_gpus(id, std::move(labels).value_or(std::vector<std::string>{}));
  }
}

void CudaCollector::count_processes(const DiscoveryResult &discovery) {
  health_.cuda_processes = discovery.processes.size();
  for (const auto &[id, process] : state_.processes()) // kept, unread: still counted
    if (process.discovered && discovery.unknown(id.pid))
      ++health_.cuda_processes;
  stats_ = tracer_.stats();
  const auto &attach = attacher_.counts();
  health_.attached_libraries = tracer_.attached().size();
  health_.attached_probes = tracer_.probe_count();
  health_.missing_symbols = attach.missing_symbols;
  health_.single_stepped_hot_entries = attach.single_stepped_hot_entries;
  health_.attach_errors = attach.errors;
  health_.ring_buffer_drops = stats_.ring_buffer_full;
  health_.stacks_lost = stats_.stacks_lost;
  health_.unreadable_processes = discovery.unreadable;
}

void CudaCollector::report_fd_limit(const DiscoveryResult &discovery, bool attach_failed,
                                    bool put_off) {
  ++health_.fd_limit_scans;
  FdLimitScan scan;
  scan.exits_seen = discovery.gone.size();
  scan.attach_put_off = put_off;
  scan.unread_processes = discovery.fd_limited.size();
  scan.pids_unlisted = discovery.pids_unlisted;
  scan.attach_failed = attach_failed;
  scan.limit = open_file_limit();
  scan.traced = {state_.processes().size(), tracer_.attached().size(), tracer_.probe_count(),
                 // Exact mode's per-process naming probes are 2 of these links: a bound.
                 launch_probes_.per_process(), settings_.max_connections};
  if (const auto message = fd_limit_warning_.note(scan, std::chrono::steady_clock::now())) {
    spdlog::error("{}", *message);
    if (journal_)
      journal_->write(fd_limit_journal_entry(scan, *message));
  }
}

void CudaCollector::write(MetricSink &sink) const {
  sink.write(tracer_families(health_));
  write_cuda_metrics(state_, settings_.series, sink);
  sink.write(kernel_name_families(state_));
  sink.write({container_info_family(state_)});
  write_launch_counting_metrics(launch_probes_.mode_name(), state_, launch_probes_.processes(),
                                launch_probes_.trap_seconds(), sink);
}

void CudaCollector::publish(PublishedSnapshot &snapshot) {
  // Rebuilt only when it changed: an idle process with thousands of names cost a core's
  // share every scan when it was rebuilt each time.
  if (!kernels_json_gzip_ || kernels_json_version_ != state_.kernels_version()) {
    kernels_json_gzip_ = std::make_shared<const std::string>(kernels_json_gzip(state_));
    kernels_json_version_ = state_.kernels_version();
  }
  snapshot.kernels_json_gzip = kernels_json_gzip_;
  for (const auto &[id, process] : state_.processes())
    snapshot.comms[id] = process.comm;
}

} // namespace neutracer
