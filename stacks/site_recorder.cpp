// SPDX-License-Identifier: Apache-2.0
#include "stacks/site_recorder.h"

#include <algorithm>

#include "cuda/cuda_api_table.h"
#include "stacks/mixed_stack.h"

namespace neutracer {

SiteRecorder::SiteRecorder(StackMap &map, const ProcFs &procfs, SiteRecorderSettings settings)
    : map_(map), settings_(settings), symbolizer_(procfs, settings.symbols), python_(procfs),
      sites_(settings.sites) {}

const std::vector<std::uint64_t> *SiteRecorder::frames_of(std::int32_t id) {
  if (id == NT_NO_STACK)
    return nullptr;
  if (const auto it = stacks_.find(id); it != stacks_.end()) {
    it->second.used_scan = scan_;
    return &it->second.frames;
  }
  auto frames = map_.read_stack(id);
  if (!frames)
    return nullptr;
  return &stacks_.insert_or_assign(id, CachedStack{std::move(*frames), scan_}).first->second.frames;
}

namespace {

// The Python frames a site's stack holds (the probe's walk, joined when the site was made).
std::vector<Frame> python_frames_of(const Site &site) {
  std::vector<Frame> frames;
  if (site.stack)
    for (const auto &frame : site.stack->frames)
      if (frame.kind == FrameKind::python)
        frames.push_back(frame);
  return frames;
}

} // namespace

SymbolizedStack SiteRecorder::symbolize(const ProcessId &id, const CallSiteStack &stack) {
  auto native = symbolizer_.symbolize(id, stack);
  if (stack.python_key == 0)
    return native;
  auto python = map_.read_python_stack(stack.python_key);
  const auto tgid = static_cast<std::uint32_t>(id.pid);
  if (python && nt_python_stack_key(tgid, &*python) != stack.python_key) {
    // Not the frames the key was made from: drop it, so the next call stores the right ones.
    map_.delete_python_stack(stack.python_key);
    ++python_stacks_rejected_;
    python.reset();
  }
  const PythonProcess *process = python_.process_of(id);
  if (!python || !process) {
    native.python_lost = true;
    return native;
  }
  return with_python_frames(std::move(native), python_.frames(id, *python),
                            process->interpreter_path, (python->status & NT_PYTHON_TRUNCATED) != 0);
}

SiteIndex SiteRecorder::site_of(const ProcessId &id, ProcessSites &sites, std::int32_t stack_id,
                                StackCapture capture, std::uint64_t caller,
                                std::uint64_t python_key, double budget_share) {
  const auto *frames = frames_of(stack_id);
  if (!frames)
    return sites.pseudo_site(SiteKind::no_stack);
  auto stack = call_site_stack(*frames, capture, caller, map_.stack_depth());
  stack.python_key = python_key;
  const auto known = sites.sites().size();
  const auto index =
      sites.site(stack, sites_.may_add(sites, budget_share), [&] { return symbolize(id, stack); });
  if (sites.sites().size() == known)
    retry_python(id, sites, index, stack);
  else if (python_key != 0)
    python_retried_.emplace(id, index); // just read: not again in this scan
  return index;
}

void SiteRecorder::retry_python(const ProcessId &id, ProcessSites &sites, SiteIndex index,
                                const CallSiteStack &stack) {
  // The probe stores a missing entry again at each call, so a later call of an evicted stack
  // brings its frames back.
  const auto &site = sites.sites()[index];
  if (!site.stack || !site.stack->python_lost || !python_retried_.emplace(id, index).second)
    return;
  auto again = symbolize(id, stack);
  if (!again.python_lost)
    sites.restack(index, std::move(again));
}

void SiteRecorder::update_python_processes(const std::vector<ProcessId> &processes) {
  if (!enabled())
    return;
  for (const auto &id : processes) {
    if (python_written_.contains(id))
      continue;
    const PythonProcess *process = python_.process_of(id);
    if (!process)
      continue;
    const auto offsets = to_abi_offsets(process->offsets, process->runtime_address, id.start_ticks,
                                        settings_.ns_per_tick);
    if (map_.set_python_process(static_cast<std::uint32_t>(id.pid), offsets))
      python_written_.insert(id);
  }
}

void SiteRecorder::record(const ProcessId &id, const nt_call_event &event) {
  if (!enabled())
    return;
  const auto api = static_cast<nt_api>(event.api);
  const auto kind = allocation_kind(api);
  if (kind && *kind != MemoryKind::host_pinned) {
    auto &sites = sites_.process(id);
    const auto site =
        site_of(id, sites, event.stack_id, StackCapture::at_return, 0, event.python_stack);
    if (event.result != 0) {
      // Width x height for a pitched request: the pitch is only written on success.
      const std::uint64_t requested =
          api == NT_API_MEM_ALLOC_PITCH ? event.args[2] * event.args[3] : event.args[1];
      sites.failed_allocation(site, requested, event.exit_ns);
    } else {
      const std::uint64_t bytes =
          api == NT_API_MEM_ALLOC_PITCH ? event.out[1] * event.args[3] : event.args[1];
      sites.allocation(site, event.out[0], bytes, api == NT_API_MEM_CREATE);
    }
  } else if (is_free_api(api) && event.result == 0 && api != NT_API_MEM_FREE_HOST) {
    if (auto *sites = sites_.find(id))
      sites->free(event.args[0], api == NT_API_MEM_RELEASE);
  } else if (is_sync_api(api)) {
    auto &sites = sites_.process(id);
    const double seconds = event.exit_ns > event.enter_ns
                               ? static_cast<double>(event.exit_ns - event.enter_ns) / 1e9
                               : 0.0;
    sites.wait(site_of(id, sites, event.stack_id, StackCapture::at_entry, event.caller,
                       event.python_stack),
               seconds);
  }
}

// The share of a process's site budget that the allocator view's blocks may fill.
constexpr double kBlockSiteShare = 0.5;

std::int32_t SiteRecorder::block_site(const ProcessId &id, std::int32_t stack_id,
                                      std::uint64_t python_key) {
  if (!enabled())
    return -1;
  auto &sites = sites_.process(id);
  return static_cast<std::int32_t>(
      site_of(id, sites, stack_id, StackCapture::at_return, 0, python_key, kBlockSiteShare));
}

std::int32_t SiteRecorder::entry_site(const ProcessId &id, std::int32_t stack_id,
                                      std::uint64_t caller, std::uint64_t python_key) {
  if (!enabled())
    return -1;
  auto &sites = sites_.process(id);
  return static_cast<std::int32_t>(
      site_of(id, sites, stack_id, StackCapture::at_entry, caller, python_key, 1.0));
}

const Site *SiteRecorder::site(const ProcessId &id, std::int32_t index) const {
  const auto *sites = sites_.find(id);
  if (!sites || index < 0 || static_cast<std::size_t>(index) >= sites->sites().size())
    return nullptr;
  return &sites->sites()[static_cast<std::size_t>(index)];
}

void SiteRecorder::set_inflight(const std::vector<InflightCall> &calls, std::uint64_t now_ns,
                                const ProcessOf &process_of) {
  if (!enabled())
    return;
  std::map<ProcessId, std::map<SiteIndex, std::pair<std::uint64_t, double>>> pending;
  // The thread of each site's longest wait, and its Python stack key (0: none).
  std::map<ProcessId, std::map<SiteIndex, std::pair<std::uint32_t, std::uint64_t>>> longest_thread;
  inflight_ids_.clear();
  for (const auto &call : calls) {
    if (!is_sync_api(call.api) || call.stack_id == NT_NO_STACK)
      continue;
    inflight_ids_.insert(call.stack_id);
    const auto id = process_of(call.tgid, call.proc_start_ns);
    auto &sites = sites_.process(id);
    const auto site =
        site_of(id, sites, call.stack_id, StackCapture::at_entry, call.caller, call.python_stack);
    auto &[count, longest] = pending[id][site];
    ++count;
    const double waited =
        now_ns > call.enter_ns ? static_cast<double>(now_ns - call.enter_ns) / 1e9 : 0.0;
    if (waited >= longest && waited >= settings_.python_wait_seconds)
      longest_thread[id][site] = {call.tid, call.python_stack};
    longest = std::max(longest, waited);
  }
  for (auto &[id, sites] : sites_.processes()) {
    const auto found = pending.find(id);
    sites.set_pending_waits(found == pending.end()
                                ? std::map<SiteIndex, std::pair<std::uint64_t, double>>{}
                                : found->second);
    // The frames the probe took at the call's entry (any CPython 3.9+), which the site keyed
    // by them holds already; else read now, while the thread still waits in the call (3.11+):
    // its frames are the ones that led to the wait.
    std::map<SiteIndex, std::vector<Frame>> python;
    if (const auto threads = longest_thread.find(id); threads != longest_thread.end())
      for (const auto &[site, waiter] : threads->second) {
        const auto &[tid, key] = waiter;
        auto frames = key != 0 ? python_frames_of(sites.sites()[site]) : std::vector<Frame>{};
        if (frames.empty())
          frames = python_.waiting_frames(id, static_cast<int>(tid));
        if (!frames.empty())
          python.emplace(site, std::move(frames));
      }
    sites.set_waiting_python(std::move(python));
  }
}

void SiteRecorder::set_launch_stacks(const std::vector<LaunchStackCount> &counts,
                                     const ProcessOf &process_of) {
  if (!enabled())
    return;
  std::map<ProcessId, std::map<SiteIndex, std::uint64_t>> samples;
  launch_ids_.clear();
  for (const auto &count : counts) {
    launch_ids_.insert(count.stack_id);
    const auto id = process_of(count.tgid, count.proc_start_ns);
    auto &sites = sites_.process(id);
    auto &known = launch_sites_[id];
    const std::tuple key{count.stack_id, count.caller, count.python_stack};
    auto found = known.find(key);
    if (found == known.end())
      found = known
                  .emplace(key, site_of(id, sites, count.stack_id, StackCapture::at_entry,
                                        count.caller, count.python_stack))
                  .first;
    samples[id][found->second] += count.samples;
  }
  for (auto &[id, sites] : sites_.processes()) {
    const auto found = samples.find(id);
    sites.set_launch_samples(found == samples.end() ? std::map<SiteIndex, std::uint64_t>{}
                                                    : found->second);
  }
}

void SiteRecorder::set_leak_samples(const ProcessId &id, std::span<const std::uint64_t> addresses) {
  if (auto *sites = sites_.find(id))
    sites->set_leak_samples(addresses);
}

void SiteRecorder::end_scan() {
  ++scan_;
  python_retried_.clear();
  if (!enabled() || scan_ % std::max<std::uint64_t>(1, settings_.collect_every_scans) != 0)
    return;
  // Kept: ids the kernel's maps refer to (waits in progress, launch samples) and ids used
  // lately, which their call sites will likely hit again. The rest go, from the map and from
  // here: an id deleted while an event naming it is still in the ring buffer costs that event its
  // stack (no_stack), never a wrong one, unless another stack took the id in between.
  auto ids = map_.stack_ids();
  std::sort(ids.begin(), ids.end());
  stack_map_ids_ = ids.size();
  std::vector<std::int32_t> unused;
  for (const auto id : ids) {
    if (inflight_ids_.contains(id) || launch_ids_.contains(id))
      continue;
    const auto cached = stacks_.find(id);
    if (cached != stacks_.end() && cached->second.used_scan + settings_.keep_unused_scans >= scan_)
      continue;
    unused.push_back(id);
  }
  map_.delete_stacks(unused);
  for (const auto id : unused)
    stacks_.erase(id);
  // Cached ids the map no longer holds (deleted above, or never there).
  std::erase_if(stacks_, [&](const auto &entry) {
    return !std::binary_search(ids.begin(), ids.end(), entry.first);
  });
  stacks_deleted_ += unused.size();
  stack_map_ids_ -= unused.size();
}

void SiteRecorder::forget(const ProcessId &id) {
  sites_.forget(id);
  launch_sites_.erase(id);
  views_.erase(id);
  symbolizer_.forget(id);
  python_.forget(id);
  if (python_written_.erase(id) != 0 &&
      std::none_of(python_written_.begin(), python_written_.end(),
                   [&](const ProcessId &other) { return other.pid == id.pid; }))
    map_.forget_python_process(static_cast<std::uint32_t>(id.pid)); // not a later one's entry
}

std::int32_t SiteRecorder::allocation_site(const ProcessId &id, std::int32_t stack_id,
                                           std::uint64_t python_key) const {
  const auto *sites = sites_.find(id);
  if (!sites)
    return -1;
  if (stack_id == NT_NO_STACK) {
    // Recorded at the no_stack site, if the process has one.
    for (SiteIndex index = 0; index < sites->sites().size(); ++index)
      if (sites->sites()[index].kind == SiteKind::no_stack)
        return static_cast<std::int32_t>(index);
    return -1;
  }
  const auto cached = stacks_.find(stack_id);
  if (cached == stacks_.end())
    return -1;
  auto stack =
      call_site_stack(cached->second.frames, StackCapture::at_return, 0, map_.stack_depth());
  stack.python_key = python_key;
  const auto index = sites->find_site(stack);
  return index ? static_cast<std::int32_t>(*index) : -1;
}

const Site *SiteRecorder::site_for(const ProcessId &id, SitePurpose purpose,
                                   std::uint64_t time_ns) const {
  const auto *sites = sites_.find(id);
  if (!sites)
    return nullptr;
  std::optional<SiteIndex> index;
  switch (purpose) {
  case SitePurpose::failure:
    index = sites->failure_site(time_ns);
    break;
  case SitePurpose::wait:
    index = sites->wait_site();
    break;
  }
  return index ? &sites->sites()[*index] : nullptr;
}

std::vector<const Site *> SiteRecorder::leak_sites(const ProcessId &id, std::size_t count) const {
  std::vector<const Site *> found;
  if (const auto *sites = sites_.find(id))
    for (const auto index : sites->leak_sites(count))
      found.push_back(&sites->sites()[index]);
  return found;
}

std::map<ProcessId, std::shared_ptr<const ProcessSitesView>> SiteRecorder::views() {
  std::map<ProcessId, std::shared_ptr<const ProcessSitesView>> result;
  for (const auto &[id, sites] : sites_.processes()) {
    auto &[version, view] = views_[id];
    if (!view || version != sites.version()) {
      view = std::make_shared<const ProcessSitesView>(
          ProcessSitesView{sites.sites(), sites.untracked_allocations()});
      version = sites.version();
    }
    result.emplace(id, view);
  }
  return result;
}

} // namespace neutracer
