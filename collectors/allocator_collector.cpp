// SPDX-License-Identifier: Apache-2.0
#include "collectors/allocator_collector.h"

#include <spdlog/spdlog.h>

#include "common/monotonic_clock.h"
#include "common/proc_parsers.h"
#include "config/config.h"

namespace neutracer {
namespace {

// Different libc10_cuda.so files whose notes are remembered (wheels, venvs, containers).
constexpr std::size_t kProbeCacheFiles = 64;

} // namespace

AllocatorCollectorSettings allocator_collector_settings(const Config &config) {
  AllocatorCollectorSettings settings;
  settings.enabled = config.allocator.enabled;
  settings.investigations.open_seconds = in_seconds(config.allocator.view_duration);
  settings.investigations.cooldown_seconds = in_seconds(config.allocator.cooldown);
  settings.investigations.max_open = config.allocator.max_views;
  settings.proc_root = config.proc_root;
  return settings;
}

AllocatorCollector::AllocatorCollector(const AllocatorCollectorSettings &settings,
                                       CudaTracing &tracer, const CudaCollector &cuda,
                                       SiteRecorder *sites)
    : settings_(settings), tracer_(tracer), cuda_(cuda), sites_(sites), procfs_(settings.proc_root),
      investigations_(settings.investigations) {}

AllocatorCollector::~AllocatorCollector() {
  for (const auto &[id, view] : views_)
    if (view.open)
      tracer_.detach_allocator_probes(id.pid);
}

bool AllocatorCollector::request(int pid) {
  if (!settings_.enabled)
    return false;
  const std::lock_guard lock(requests_mutex_);
  if (requests_.size() < 64)
    requests_.push_back(pid);
  return true;
}

const AllocatorView *AllocatorCollector::view(const ProcessId &id) const {
  const auto it = views_.find(id);
  return it == views_.end() ? nullptr : &it->second;
}

std::map<ProcessId, double> AllocatorCollector::rising() const {
  std::map<ProcessId, double> found;
  for (const auto &[id, view] : views_)
    if (view.open && view.verdict.rising)
      found.emplace(id, view.verdict.growth_bytes_per_second);
  return found;
}

void AllocatorCollector::block(const ProcessId &id, const nt_block_event &event) {
  const auto it = views_.find(id);
  if (it == views_.end() || !it->second.open) {
    ++counts_.late_events;
    return;
  }
  auto &view = it->second;
  if (event.op == NT_BLOCK_FREE) {
    ++view.frees_seen;
    view.ledger.freed(event.address, event.time_ns);
    // Every change: a step's temporaries come and go between scans, and the trend wants the
    // level between them (window minimums), not wherever a scan falls in a step.
    view.trend.observe(event.time_ns, view.ledger.live_bytes());
    return;
  }
  ++view.allocations_seen;
  const std::int32_t site =
      sites_ ? sites_->block_site(id, event.stack_id, event.python_stack) : -1;
  view.ledger.allocated({.address = event.address,
                         .bytes = event.bytes,
                         .weight = event.weight,
                         .site = site,
                         .time_ns = event.time_ns});
  view.trend.observe(event.time_ns, view.ledger.live_bytes());
}

bool AllocatorCollector::scan() {
  if (!settings_.enabled)
    return true;
  const auto now = monotonic_ns();
  forget_exited();
  for (const auto &[id, process] : cuda_.state().processes())
    investigations_.observe(id, now, process.gpu_bytes_in_use());
  take_requests(now);
  for (const auto &change : investigations_.decide(now)) {
    if (!change.open) {
      close_view(change.process, now);
      continue;
    }
    if (const auto failure = open_view(change.process, change.reason, now)) {
      investigations_.failed(change.process, now);
      ++counts_.failed[static_cast<std::size_t>(failure->kind)];
      spdlog::info("allocator view of pid {} not opened: {}", change.process.pid, failure->reason);
    }
  }
  for (auto &[id, view] : views_) {
    if (!view.open)
      continue;
    view.trend.observe(now, view.ledger.live_bytes());
    view.verdict = view.trend.evaluate(now);
    view.ranking = view.ledger.ranking(now);
    if (view.verdict.rising && !view.ever_rising) {
      view.ever_rising = true;
      investigations_.verdict(id);
    }
  }
  return true;
}

void AllocatorCollector::take_requests(std::uint64_t now_ns) {
  std::vector<int> pids;
  {
    const std::lock_guard lock(requests_mutex_);
    pids.swap(requests_);
  }
  for (const int pid : pids)
    for (const auto &[id, process] : cuda_.state().processes())
      if (id.pid == pid)
        investigations_.request(id, now_ns);
}

void AllocatorCollector::forget_exited() {
  for (const auto &exited : cuda_.exited()) {
    if (investigations_.forget(exited.id) || exited.replaced)
      tracer_.detach_allocator_probes(exited.id.pid);
    views_.erase(exited.id);
  }
  // Processes the CUDA state no longer has (forgotten without an exit record) go too.
  std::erase_if(views_, [&](const auto &entry) {
    if (cuda_.state().processes().contains(entry.first))
      return false;
    if (entry.second.open) {
      investigations_.forget(entry.first);
      tracer_.detach_allocator_probes(entry.first.pid);
    }
    return true;
  });
}

std::optional<AllocatorCollector::Failure> AllocatorCollector::open_view(const ProcessId &id,
                                                                         InvestigationReason reason,
                                                                         std::uint64_t now_ns) {
  const auto mapped = torch_library(id.pid);
  if (!mapped)
    return Failure{AllocatorViewFailure::no_library, "it maps no libc10_cuda.so"};
  const auto *library = &mapped->path;
  const auto openable = procfs_.path_in_process_root(id.pid, *library).string();
  const auto &probes = probes_of(*mapped, openable);
  if (!probes.usable)
    return Failure{AllocatorViewFailure::no_probes, *library + ": " + probes.reason};
  if (auto error = tracer_.attach_allocator_probes(id.pid, openable); !error.empty())
    return Failure{AllocatorViewFailure::attach, std::move(error)};
  auto [it, added] = views_.insert_or_assign(id, AllocatorView(settings_.ledger, settings_.trend));
  auto &view = it->second;
  view.open = true;
  view.reason = reason;
  view.opened_ns = now_ns;
  view.library = *library;
  ++counts_.opened[static_cast<std::size_t>(reason)];
  spdlog::info("allocator view of pid {} opened ({}): probes on {} for {:.0f} s", id.pid,
               investigation_reason_name(reason), *library, settings_.investigations.open_seconds);
  return std::nullopt;
}

void AllocatorCollector::close_view(const ProcessId &id, std::uint64_t now_ns) {
  tracer_.detach_allocator_probes(id.pid);
  const auto it = views_.find(id);
  if (it == views_.end())
    return;
  auto &view = it->second;
  view.ranking = view.ledger.ranking(now_ns);
  view.ledger.drop_blocks();
  view.open = false;
  view.closed_ns = now_ns;
  spdlog::info("allocator view of pid {} closed after {:.0f} s: {} sampled blocks, {} freed; "
               "live tensor bytes {}",
               id.pid, static_cast<double>(now_ns - view.opened_ns) / 1e9, view.allocations_seen,
               view.frees_seen, view.ever_rising ? "rose" : "did not keep rising");
}

std::optional<MapsEntry> AllocatorCollector::torch_library(int pid) const {
  std::optional<MapsEntry> found;
  procfs_.for_each_line(pid, "maps", [&](std::string_view line) {
    if (found)
      return;
    if (const auto entry = parse_maps_line(line);
        entry && !entry->deleted && is_torch_cuda_library(entry->path))
      found = entry;
  });
  return found;
}

const TorchAllocatorProbes &AllocatorCollector::probes_of(const MapsEntry &library,
                                                          const std::string &openable_path) {
  const std::pair file{library.dev, library.inode};
  if (const auto it = probes_cache_.find(file); it != probes_cache_.end())
    return it->second;
  if (probes_cache_.size() >= kProbeCacheFiles)
    probes_cache_.clear();
  const auto notes = read_usdt_notes(openable_path);
  TorchAllocatorProbes probes;
  if (!notes.error.empty())
    probes.reason = notes.error;
  else
    probes = find_torch_allocator_probes(notes);
  return probes_cache_.emplace(file, std::move(probes)).first->second;
}

void AllocatorCollector::write(MetricSink &sink) const {
  write_allocator_metrics(views_, counts_, cuda_.state(), sink);
}

void AllocatorCollector::publish(PublishedSnapshot &snapshot) {
  auto summaries = std::make_shared<std::map<ProcessId, AllocatorViewSummary>>();
  for (const auto &[id, view] : views_)
    summaries->emplace(id, summary_of(view));
  snapshot.allocator_views = std::move(summaries);
}

} // namespace neutracer
