// SPDX-License-Identifier: Apache-2.0
#include "daemon/daemon_loop.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <malloc.h>
#include <set>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/libbpf_version.h"
#include "common/monotonic_clock.h"
#include "common/open_file_limit.h"
#include "common/proc_parsers.h"
#include "daemon/process_gpu_headroom.h"
#include "detectors/alert_journal.h"
#include "exporters/alert_site.h"
#include "exporters/api_json.h"
#include "exporters/container_metrics.h"
#include "exporters/gpu_health_metrics.h"
#include "exporters/kernel_name_metrics.h"
#include "exporters/kernels_json.h"
#include "exporters/launch_metrics.h"
#include "exporters/metric_builders.h"
#include "exporters/nvml_metrics.h"
#include "exporters/os_metrics.h"
#include "exporters/process_gpu_time_metrics.h"
#include "exposition/text_sink.h"
#include "gpus/host_gpus.h"
#include "http/content_encoding.h"
#include "nvml/gpu_saturation.h"
#include "revision.h"
#include "version.h"

namespace neutracer {
namespace {

long ticks_per_second() { return std::max(1L, sysconf(_SC_CLK_TCK)); }

// Kernel name bytes released in one scan (about as much again in series and the kernels
// document) above which freed heap memory is returned to the OS.
constexpr std::size_t kTrimAfterReleasedNameBytes = std::size_t{1} << 20;

// Scans a library may stay unmapped before its probes are removed.
constexpr int kDetachAfterUnusedScans = 10;

// Each traced process holds a descriptor (its image), next to one per probe: lift the soft
// limit (1024 under systemd) to the hard one so that a thousand processes fit.
void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
      spdlog::warn("cannot raise the open file limit: {}", std::strerror(errno));
  }
}

} // namespace

DaemonLoop::DaemonLoop(const Config &config, CudaTracing &tracer, MetricsPublisher &publisher,
                       ServiceNotifier &notifier, JournalWriter *journal, OsTracing *os_tracer)
    : config_(config), procfs_(config.proc_root), tracer_(tracer), publisher_(publisher),
      notifier_(notifier), journal_(journal), os_tracer_(os_tracer),
      host_gpus_(read_host_gpus(config.proc_root)),
      state_(CudaState::Settings{
          config.cuda.max_kernels_per_process,
          std::chrono::duration<double>(config.cuda.throughput_window).count(),
          sysconf(_SC_CLK_TCK),
          [this](const ProcessId &id) { return visible_gpus_of(procfs_, host_gpus_, id); }}),
      detectors_(detector_settings(config)), pod_names_(config.kubernetes.log_dir),
      gpu_health_(GpuHealthMonitor::Settings{config.gpu_health.kmsg_path,
                                             config.gpu_health.read_kernel_log,
                                             config.gpu_health.xid_journal_per_minute}) {
  health_.version = kVersion;
  health_.revision = kRevision;
  health_.compiler = kCompiler;
  health_.libbpf = libbpf_version();
  // Per-process launch probes when the config samples or switches off some process (without
  // uprobe_multi links, Linux < 6.6, the tracer counts every launch of every process).
  if (tracer_.per_process_launch_probes()) {
    std::vector<LaunchRule> rules;
    for (const auto &[pattern, mode] : config.cuda.launch_rules)
      rules.push_back({pattern, parse_launch_counting(mode).value_or(LaunchCounting::adaptive)});
    LaunchSamplingSettings sampling;
    sampling.max_rate = config.cuda.launch_max_rate;
    sampling.period_ns = static_cast<std::uint64_t>(
        std::chrono::nanoseconds(config.cuda.launch_sample_period).count());
    sampling.fixed_fraction = config.cuda.launch_sample_fraction;
    if (const auto trap_ns = tracer_.measure_launch_trap_ns()) {
      sampling.trap_ns = *trap_ns;
      spdlog::info("one counted launch costs the launching thread {:.2f} us here (measured); "
                   "sampled launch counts are corrected for it",
                   *trap_ns / 1000);
    } else {
      spdlog::warn("could not measure what a counted launch costs here: sampled launch counts "
                   "of launch-bound threads will run low");
    }
    launch_trap_seconds_ = sampling.trap_ns / 1e9;
    launches_.emplace(
        parse_launch_counting(config.cuda.launch_counting).value_or(LaunchCounting::adaptive),
        std::move(rules), sampling, tracer_, monotonic_ns);
    launches_->set_names_wanted([this](int pid) { return state_.has_unnamed_launches(pid); });
    launches_->set_gpu_saturated([this](int pid) {
      return gpus_saturated(nvml_snapshot_, static_cast<std::uint32_t>(pid));
    });
  }
  if (!launches_ && tracer_.per_process_name_probes())
    name_probes_.emplace(tracer_);
  if (config.stacks.enabled && tracer_.stack_depth() > 0) {
    SiteRecorderSettings settings;
    settings.sites.max_sites_per_process = config.stacks.max_sites_per_process;
    settings.sites.max_sites = config.stacks.max_sites;
    settings.ns_per_tick = 1'000'000'000ull / static_cast<std::uint64_t>(ticks_per_second());
    sites_.emplace(tracer_, procfs_, settings);
    detectors_.set_site_lookup([this](const ProcessId &id, AlertKind kind, std::uint64_t time_ns) {
      return notice_sites_of(id, kind, time_ns);
    });
  }
  raise_open_file_limit();
  for (const auto &gpu : host_gpus_)
    spdlog::info("GPU {}: {} at {}", gpu.index, gpu.uuid, gpu.pci_bus_id);
}

// A hot entry the kernel single-steps costs every launch a second trap: said at attach, and
// counted in neutracer_probe_entries_single_stepped.
void DaemonLoop::report_hot_entries(const std::string &path,
                                    const std::vector<AttachSummary::HotEntry> &entries) {
  for (const auto &entry : entries) {
    if (entry.instruction.emulated) {
      spdlog::debug("{}: {} starts with {}, which the kernel emulates: one trap per call", path,
                    entry.symbol, entry.instruction.text);
      continue;
    }
    ++health_.single_stepped_hot_entries;
    spdlog::warn("{}: {} starts with {}, which the kernel single-steps: each probed call costs "
                 "a second trap (several microseconds on virtual machines) on top of the first",
                 path, entry.symbol, entry.instruction.text);
  }
}

void DaemonLoop::attach_new_libraries(const DiscoveryResult &discovery, bool &out_of_descriptors) {
  std::set<LibraryId> in_use;
  for (const auto &process : discovery.processes)
    in_use.insert(process.libraries.begin(), process.libraries.end());
  for (const auto &library : discovery.libraries) {
    if (tracer_.is_attached(library.id))
      continue;
    const auto summary = tracer_.attach(library);
    if (!summary.retry) // not a failure: the process we opened the file through exited
      health_.attach_errors += summary.errors;
    health_.missing_symbols += summary.missing_symbols;
    out_of_descriptors |= summary.out_of_descriptors;
    if (summary.out_of_descriptors) // the scan's fd limit error says it
      continue;
    if (summary.retry)
      spdlog::info("{} vanished while attaching ({}); retrying at the next scan", library.path,
                   summary.first_error);
    else if (summary.errors)
      spdlog::warn("attached {} probes to {} with {} errors; first: {}", summary.probes,
                   library.path, summary.errors, summary.first_error);
    else
      spdlog::info("attached {} probes to {} ({} symbols not in this driver)", summary.probes,
                   library.path, summary.missing_symbols);
    report_hot_entries(library.path, summary.hot_entries);
  }
  // Detach from files no process maps any more (a driver upgrade leaves the old inode behind),
  // after a grace period so that a job restarting its CUDA processes keeps its probes. A scan
  // that could not read every process cannot tell that no process maps a file.
  if (discovery.hit_fd_limit())
    return;
  for (const auto &id : tracer_.attached()) {
    if (in_use.contains(id)) {
      unused_scans_.erase(id);
      continue;
    }
    if (++unused_scans_[id] < kDetachAfterUnusedScans)
      continue;
    spdlog::info("detaching from library dev={} inode={}: no process maps it", id.dev, id.inode);
    tracer_.detach(id);
    unused_scans_.erase(id);
  }
}

std::vector<LaunchCount> DaemonLoop::read_launch_counts() {
  return launches_ ? launches_->read(monotonic_ns()) : tracer_.read_launch_counts();
}

void DaemonLoop::drain_events(std::chrono::milliseconds timeout) {
  tracer_.poll(timeout, [this](std::span<const std::byte> bytes) {
    if (auto event = decode_event(bytes)) {
      if (launches_ || name_probes_)
        track_launches_early(std::visit([](const auto &e) { return e.tgid; }, *event));
      state_.apply(*event);
      // At once, while the process runs: a new stack is named from its maps.
      if (const auto *call = std::get_if<nt_call_event>(&*event); call && sites_)
        sites_->record(state_.process_id(call->tgid, call->proc_start_ns), *call);
    } else {
      ++health_.malformed_events;
    }
  });
}

// A process's first probed calls (context creation, module loading) come before its first
// launch: its per-process launch or naming probes are attached then, not at the next scan.
void DaemonLoop::track_launches_early(std::uint32_t tgid) {
  const auto pid = static_cast<int>(tgid);
  const bool tracked = launches_ ? launches_->tracks(pid) : name_probes_->tracks(pid);
  if (tracked || pid == static_cast<int>(getpid()) || !early_misses_.insert(pid).second)
    return;
  if (auto process = discover_cuda_process(procfs_, pid)) {
    early_misses_.erase(pid);
    if (launches_)
      launches_->track(*process, monotonic_ns());
    else
      name_probes_->track(*process);
  }
}

bool DaemonLoop::names_wanted(int pid) const {
  return !state_.has_launches(pid) || state_.has_unnamed_launches(pid);
}

void DaemonLoop::forget(const std::vector<ProcessId> &removed, std::vector<LaunchCount> &launches,
                        std::vector<InflightCall> &inflight) {
  if (removed.empty())
    return;
  const std::set<ProcessId> gone(removed.begin(), removed.end());
  if (launches_)
    for (const auto &id : removed)
      launches_->forget_counts(id.pid);
  const auto kept = [&](const auto &entry) {
    return !gone.contains(state_.process_id(entry.tgid, entry.proc_start_ns));
  };
  const auto stale_launches = std::stable_partition(launches.begin(), launches.end(), kept);
  tracer_.delete_launch_counts({stale_launches, launches.end()});
  tracer_.forget_kernel_functions([&](std::uint32_t tgid, std::uint64_t proc_start_ns) {
    return gone.contains(state_.process_id(tgid, proc_start_ns));
  });
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

void DaemonLoop::record_sites(const std::vector<InflightCall> &inflight) {
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

// Which live blocks the leak detector sampled: read only where its samples changed (a sample's
// site is fixed while the block lives, so the same samples count the same).
void DaemonLoop::record_leak_samples() {
  if (!sites_)
    return;
  std::erase_if(leak_samples_seen_,
                [&](const auto &entry) { return !detectors_.findings().contains(entry.first); });
  for (const auto &[id, findings] : detectors_.findings()) {
    const std::pair counts{findings.leak.sampled, findings.leak.unfreed};
    auto [seen, added] = leak_samples_seen_.try_emplace(id, counts);
    if (!added && seen->second == counts)
      continue;
    seen->second = counts;
    sites_->set_leak_samples(id, detectors_.leak_sample_addresses(id));
  }
}

std::vector<NoticeSite> DaemonLoop::notice_sites_of(const ProcessId &id, AlertKind kind,
                                                    std::uint64_t time_ns) const {
  std::vector<NoticeSite> notices;
  if (!sites_)
    return notices;
  if (kind == AlertKind::memory_leak) {
    for (const Site *site : sites_->leak_sites(id, kLeakNoticeSites))
      if (auto notice = notice_site(*site)) {
        notice->live_bytes = site->counts.live_bytes;
        notices.push_back(std::move(*notice));
      }
    return notices;
  }
  const auto purpose = kind == AlertKind::hang ? SitePurpose::wait : SitePurpose::failure;
  if (const Site *site = sites_->site_for(id, purpose, time_ns))
    if (auto notice = notice_site(*site))
      notices.push_back(std::move(*notice));
  return notices;
}

// An exec keeps the PID and start time but starts a new image: the old image's memory, kernels
// and calls must not carry over. Whatever the new image did before this scan noticed it is
// dropped with them (never counted twice; the BPF keys cannot tell the two images apart).
void DaemonLoop::forget_replaced_images(std::vector<LaunchCount> &launches,
                                        std::vector<InflightCall> &inflight) {
  std::vector<ProcessId> replaced;
  for (auto it = images_.begin(); it != images_.end();) {
    if (!it->second.replaced()) {
      ++it;
      continue;
    }
    replaced.push_back(it->first);
    it = images_.erase(it);
  }
  if (replaced.empty())
    return;
  for (const auto &id : replaced)
    spdlog::debug("pid {} exec'd or exited: its CUDA state starts over", id.pid);
  state_.forget_images(replaced);
  forget(replaced, launches, inflight);
}

void DaemonLoop::track_images() {
  std::erase_if(images_,
                [&](const auto &entry) { return !state_.processes().contains(entry.first); });
  for (const auto &[id, process] : state_.processes())
    if (process.discovered && !images_.contains(id))
      if (auto image = ProcessImage::open(procfs_, id.pid))
        images_.emplace(id, std::move(*image));
}

void DaemonLoop::scan_once() {
  const auto started = std::chrono::steady_clock::now();
  const FdLimitWatch scan_reads(procfs_);
  auto discovery = discover_cuda_processes(procfs_);
  // The daemon maps libcuda itself once NVML is loaded: it never traces itself.
  std::erase_if(discovery.processes,
                [self = static_cast<int>(getpid())](const auto &p) { return p.id.pid == self; });
  pod_names_.resolve(discovery.processes);
  docker_names_.resolve(discovery.processes);
  bool attach_out_of_descriptors = false;
  attach_new_libraries(discovery, attach_out_of_descriptors);
  if (launches_)
    launches_->update_processes(discovery.processes, monotonic_ns(),
                                [&discovery](int pid) { return discovery.unknown(pid); });
  if (name_probes_)
    name_probes_->update(
        discovery.processes, [this](int pid) { return names_wanted(pid); },
        [&discovery](int pid) { return discovery.unknown(pid); });
  early_misses_.clear();
  // Names and allocations that arrived before now are applied before counts are joined.
  drain_events(std::chrono::milliseconds(0));
  auto launches = read_launch_counts();
  auto inflight = tracer_.read_inflight_calls();
  if (sites_)
    launch_stacks_ = tracer_.read_launch_stacks();
  // Counted from the full reads the scan makes anyway: no extra syscalls.
  map_occupancy_ = {{"launches", launches.size(), tracer_.launch_map_max_entries()},
                    {"inflight", inflight.size(), tracer_.inflight_map_max_entries()}};
  const auto name_bytes = state_.kernel_name_bytes();
  forget_replaced_images(launches, inflight);
  state_.set_launch_counts(launches);
  if (launches_) {
    std::set<int> estimated;
    for (const auto &view : launches_->processes())
      if (view.estimated)
        estimated.insert(view.pid);
    state_.set_estimated_launches(estimated);
  }
  state_.set_inflight_calls(inflight, monotonic_ns());
  // A process this scan could not read, or whose stat it could not open for lack of
  // descriptors, is alive as far as anyone knows: an exit here would wipe a live one's state.
  const auto removed = state_.update_processes(discovery, [&](const ProcessId &id) {
    if (discovery.unknown(id.pid))
      return true;
    const FdLimitWatch reading(procfs_);
    const auto start_ticks = process_start_ticks(procfs_, id.pid);
    return start_ticks == id.start_ticks || (!start_ticks && reading.hit());
  });
  forget(removed, launches, inflight);
  record_sites(inflight);
  // Megabytes at 1 000 processes (a full read of each map): freed before the publish below
  // builds the snapshot, not held through it.
  std::vector<LaunchCount>().swap(launches);
  std::vector<InflightCall>().swap(inflight);
  track_images();
  read_visible_gpus();
  sample_os();
  if (nvml_) { // ~40 ms per GPU (PCIe throughput is measured over 20 ms per direction)
    ProcessGpuTime::Traced traced;
    for (const auto &[id, process] : state_.processes())
      traced.emplace(static_cast<std::uint32_t>(id.pid), id);
    nvml_snapshot_ = nvml_->sample(traced);
  }
  watch_gpu_health();
  run_detectors();
  const auto now = std::chrono::steady_clock::now();
  if (last_tick_ != std::chrono::steady_clock::time_point{})
    state_.tick(std::chrono::duration<double>(now - last_tick_).count());
  last_tick_ = now;

  cuda_processes_ = discovery.processes.size();
  for (const auto &[id, process] : state_.processes()) // kept, unread: still counted
    if (process.discovered && discovery.unknown(id.pid))
      ++cuda_processes_;
  const auto stats = tracer_.stats();
  health_.attached_libraries = tracer_.attached().size();
  health_.attached_probes = tracer_.probe_count();
  health_.ring_buffer_drops = stats.ring_buffer_full;
  health_.launch_map_full = stats.launch_map_full;
  health_.inflight_map_full = stats.inflight_map_full;
  health_.launch_stacks_full = stats.launch_stacks_full;
  health_.stacks_lost = stats.stacks_lost;
  if (sites_) {
    sites_->end_scan();
    health_.call_sites = sites_->sites().total_stack_sites();
    health_.python_stacks_rejected = sites_->python_stacks_rejected();
  }
  health_.unreadable_processes = discovery.unreadable;
  health_.scan_duration_seconds = std::chrono::duration<double>(now - started).count();
  ++health_.scans;
  if (scan_reads.hit() || attach_out_of_descriptors)
    report_fd_limit(discovery, attach_out_of_descriptors, now);
  publish();
  // The names of a process that exited, their series and the old kernels document were freed
  // (publish replaced them), but glibc keeps freed heap pages: hand them back after a large
  // release, or the daemon's RSS stays at its peak.
  if (const auto kept = state_.kernel_name_bytes();
      kept < name_bytes && name_bytes - kept >= kTrimAfterReleasedNameBytes)
    malloc_trim(0);
}

void DaemonLoop::report_fd_limit(const DiscoveryResult &discovery, bool attach_failed,
                                 std::chrono::steady_clock::time_point now) {
  ++health_.fd_limit_scans;
  FdLimitScan scan;
  scan.unread_processes = discovery.fd_limited.size();
  scan.pids_unlisted = discovery.pids_unlisted;
  scan.attach_failed = attach_failed;
  scan.limit = open_file_limit();
  scan.traced = {state_.processes().size(), tracer_.attached().size(), tracer_.probe_count(),
                 // Exact mode's per-process naming probes are 2 of these links: a bound.
                 (tracer_.per_process_launch_probes() && launches_.has_value()) ||
                     name_probes_.has_value(),
                 config_.web.max_connections};
  if (const auto message = fd_limit_warning_.note(scan, now))
    spdlog::error("{}", *message);
}

std::optional<std::vector<std::string>>
DaemonLoop::visible_gpus_of(const ProcFs &procfs, const std::vector<HostGpu> &host_gpus,
                            const ProcessId &id) {
  // The PID must still be this process: a reused PID's environment is another's.
  if (process_start_ticks(procfs, id.pid) != id.start_ticks)
    return std::nullopt;
  const auto environ = procfs.read(id.pid, "environ");
  if (!environ)
    return std::nullopt;
  return visible_gpu_labels(*environ, host_gpus);
}

void DaemonLoop::read_visible_gpus() {
  for (const auto &id : state_.processes_without_visible_gpus()) {
    const FdLimitWatch reading(procfs_);
    auto labels = visible_gpus_of(procfs_, host_gpus_, id);
    if (!labels && reading.hit()) // not read for lack of descriptors: the next scan reads it
      continue;
    // Unreadable (exited, hidden): the ordinal stays the label.
    state_.set_visible_gpus(id, std::move(labels).value_or(std::vector<std::string>{}));
  }
}

void DaemonLoop::sample_os() {
  std::vector<int> pids;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> traced;
  const auto ns_per_tick = 1'000'000'000ull / static_cast<std::uint64_t>(ticks_per_second());
  for (const auto &[id, process] : state_.processes()) {
    pids.push_back(id.pid);
    traced.emplace_back(static_cast<std::uint32_t>(id.pid), id.start_ticks * ns_per_tick);
  }
  os_samples_ = sample_processes(procfs_, pids, ticks_per_second(), sysconf(_SC_PAGESIZE));
  // A PID reused since discovery is another process: its figures are not ours.
  std::erase_if(os_samples_, [&](const auto &entry) {
    return !state_.processes().contains(ProcessId{entry.first, entry.second.start_ticks});
  });
  if (os_tracer_ != nullptr) {
    os_tracer_->set_traced(traced);
    os_counters_ = os_tracer_->read();
  }
}

void DaemonLoop::run_detectors() {
  std::map<ProcessId, double> cpu_seconds;
  for (const auto &[pid, sample] : os_samples_)
    cpu_seconds[ProcessId{pid, sample.start_ticks}] =
        sample.user_cpu_seconds + sample.system_cpu_seconds;
  const auto changes = state_.take_memory_changes();
  for (const auto &[id, list] : changes)
    if (sites_)
      timeline_.record(id, list, [&, id = id](const MemoryChange &change) {
        return sites_->allocation_site(id, change.stack_id, change.python_stack);
      });
    else
      timeline_.record(id, list);
  // The free memory read at the previous scan: before this scan's changes
  // (detectors/device_headroom.h).
  detectors_.scan(state_, changes, cpu_seconds, monotonic_ns(), headroom_);
  headroom_ = process_gpu_headroom(state_, nvml_snapshot_);
  record_leak_samples();

  std::vector<ProcessId> exited_ids;
  for (const auto &exited : state_.take_exited()) {
    exited_ids.push_back(exited.id);
    if (exited.gpu_bytes_in_use == 0)
      continue;
    ++delivery_.exited_holding_memory;
    delivery_.bytes_held_at_exit += exited.gpu_bytes_in_use;
    spdlog::info("{} (pid {}) exited holding {} bytes of GPU memory (freed by the driver)",
                 exited.comm, exited.id.pid, exited.gpu_bytes_in_use);
    write_journal(exit_journal_entry(exited));
  }
  detectors_.forget(exited_ids);
  for (const auto &id : exited_ids) {
    timeline_.forget(id);
    if (sites_)
      sites_->forget(id);
  }

  for (const auto &notice : detectors_.take_notices()) {
    const auto entry = journal_entry(notice);
    spdlog::warn("alert: {}", entry.message);
    write_journal(entry);
  }
}

// Xid reports from the kernel log and NVML's health values: counted, tied to the traced process
// the driver names, journaled.
void DaemonLoop::watch_gpu_health() {
  std::vector<std::pair<std::string, int>> addresses;
  for (const auto &device : nvml_devices())
    addresses.emplace_back(device.pci_bus_id, static_cast<int>(device.index));
  if (addresses.empty()) // without NVML, the driver's own list numbers GPUs the same way
    for (const auto &gpu : host_gpus_)
      addresses.emplace_back(gpu.pci_bus_id, gpu.index);
  std::set<ProcessId> live;
  for (const auto &[id, process] : state_.processes())
    live.insert(id);
  const auto traced = [this](std::uint32_t pid) -> std::optional<XidProcess> {
    for (const auto &[id, process] : state_.processes())
      if (id.pid == static_cast<int>(pid))
        return XidProcess{id, process.comm, process.container.identity.id};
    return std::nullopt;
  };
  for (const auto &entry :
       gpu_health_.scan(nvml_snapshot_, GpuAddressBook(addresses), traced, live, monotonic_ns()))
    write_journal(entry);
}

void DaemonLoop::write_journal(const JournalEntry &entry) {
  if (journal_ != nullptr && !journal_->write(entry))
    ++delivery_.journal_errors;
}

void DaemonLoop::publish() {
  auto snapshot = std::make_shared<PublishedSnapshot>();
  snapshot->from_a_scan = true;
  // Rendered here, once per scan, into a buffer the size of the last one, then kept deflated.
  // The per-process families go straight into the text as they are written: built as
  // MetricFamily values first, their label vectors took more memory than the text
  // (BENCHMARKS.md, "The daemon's own cost").
  std::string metrics_text;
  metrics_text.reserve(metrics_text_bytes_ + metrics_text_bytes_ / 8);
  TextSink text(metrics_text);
  std::vector<MetricFamily> head = daemon_families(health_, cuda_processes_);
  if (os_tracer_ != nullptr)
    add_os_map_errors(os_tracer_->stats(), head);
  text.write(head);
  head.clear();
  const SeriesSettings series{config_.metrics.process_histograms};
  write_cuda_metrics(state_, series, text);
  text.write(kernel_name_families(state_));
  write_detector_metrics(detectors_, delivery_, text);
  {
    std::vector<OsProcessView> os_views;
    os_views.reserve(state_.processes().size());
    for (const auto &[id, process] : state_.processes()) {
      OsProcessView view{process_labels(id, process.comm, process.container), std::nullopt,
                         std::nullopt};
      if (const auto sample = os_samples_.find(id.pid); sample != os_samples_.end())
        view.proc = sample->second;
      if (const auto counters = os_counters_.find(static_cast<std::uint32_t>(id.pid));
          counters != os_counters_.end())
        view.bpf = counters->second;
      os_views.push_back(std::move(view));
    }
    write_os_metrics(os_views, series, text);
  }
  text.write({container_info_family(state_)});
  write_launch_counting_metrics(
      launches_ ? config_.cuda.launch_counting : std::string("exact"), state_,
      launches_ ? launches_->processes() : std::vector<LaunchProcessView>{}, launch_trap_seconds_,
      text);
  text.write(nvml_families(nvml_snapshot_));
  text.write(nvml_health_families(nvml_snapshot_));
  text.write(xid_families(gpu_health_, state_));
  text.write(process_gpu_time_families(nvml_snapshot_, state_));
  CollectorHealth collectors;
  collectors.os_tracer = os_tracer_ != nullptr;
  if (nvml_ || nvml_unavailable_)
    collectors.nvml = nvml_snapshot_.ready;
  collectors.nvml_process_utilization = nvml_snapshot_.process_utilization_up;
  if (gpu_health_.reads_kernel_log())
    collectors.kernel_log = gpu_health_.kernel_log().healthy;
  text.write({collector_family(collectors)});
  text.write(bpf_map_families(map_occupancy_));
  if (os_tracer_ != nullptr)
    text.write({os_network_source_family(os_tracer_->stats())});
  metrics_text_bytes_ = metrics_text.size();
  // Deflated while the previous snapshot is still served: that one holds its text deflated too,
  // so the scan's plain text is the only large copy, and only until here.
  snapshot->metrics_deflated = std::make_shared<const DeflatedText>(deflate_text(metrics_text));
  std::string().swap(metrics_text);
  // Rebuilt only when it changed: an idle process with thousands of names cost a core's
  // share every scan when it was rebuilt each time.
  if (!kernels_json_gzip_ || kernels_json_version_ != state_.kernels_version()) {
    kernels_json_gzip_ = std::make_shared<const std::string>(kernels_json_gzip(state_));
    kernels_json_version_ = state_.kernels_version();
  }
  snapshot->kernels_json_gzip = kernels_json_gzip_;
  snapshot->processes_json_gzip =
      std::make_shared<const std::string>(processes_json_gzip(state_, detectors_));
  snapshot->timelines =
      std::make_shared<const std::map<ProcessId, ProcessTimeline>>(timeline_.processes());
  for (const auto &[id, process] : state_.processes())
    snapshot->comms[id] = process.comm;
  if (sites_) {
    snapshot->sites =
        std::make_shared<const std::map<ProcessId, std::shared_ptr<const ProcessSitesView>>>(
            sites_->views());
    snapshot->stacks = {true, tracer_.stack_depth(), config_.stacks.launch_sample_every};
  }
  snapshot->clock = ClockOffset::now();
  snapshot->alerts_json = alerts_json(detectors_, snapshot->clock);
  publisher_.publish(std::move(snapshot));
}

const std::vector<NvmlDevice> &DaemonLoop::nvml_devices() const {
  static const std::vector<NvmlDevice> kNone;
  return nvml_ ? nvml_->devices() : kNone;
}

void DaemonLoop::run(const std::atomic<bool> &stop, const std::function<void()> &between_polls) {
  auto next_scan = std::chrono::steady_clock::now();
  while (!stop.load()) {
    if (between_polls)
      between_polls();
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_scan) {
      scan_once();
      notifier_.watchdog_ping();
      next_scan += config_.scan_interval;
      if (next_scan < now) // fell behind: do not scan back to back
        next_scan = now + config_.scan_interval;
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        next_scan - std::chrono::steady_clock::now());
    if (launches_) {
      launches_->tick(monotonic_ns());
      const auto deadline = launches_->next_deadline_ns();
      const auto now_ns = monotonic_ns();
      if (deadline != UINT64_MAX)
        wait = std::min(wait, std::chrono::milliseconds(
                                  deadline > now_ns ? (deadline - now_ns) / 1'000'000 : 0));
    }
    // Short polls keep shutdown prompt; events are consumed as they come.
    drain_events(std::clamp(wait, std::chrono::milliseconds(0), std::chrono::milliseconds(100)));
  }
}

} // namespace neutracer
