// SPDX-License-Identifier: Apache-2.0
#include "cuda/cuda_state.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/enum_names.h"

namespace neutracer {
namespace {

constexpr std::size_t index_of(MemoryKind kind) { return static_cast<std::size_t>(kind); }
constexpr std::size_t index_of(CopyDirection direction) {
  return static_cast<std::size_t>(direction);
}

bool is_pseudo_kernel(std::string_view label) { return label.starts_with('['); }

enum class Side { unknown, host, device };

// Which side of a copy an address lies on, from the live allocations we saw.
Side side_of(const std::map<std::uint64_t, Allocation> &live, std::uint64_t address) {
  auto it = live.upper_bound(address);
  if (it == live.begin())
    return Side::unknown;
  --it;
  if (address - it->first >= it->second.size)
    return Side::unknown;
  return it->second.kind == MemoryKind::host_pinned ? Side::host : Side::device;
}

// CUmemorytype: 1 host, 2 device, 3 array, 4 unified (direction unknown).
Side side_of_memory_type(std::uint32_t type) {
  switch (type) {
  case 1:
    return Side::host;
  case 2:
  case 3:
    return Side::device;
  default:
    return Side::unknown;
  }
}

CopyDirection direction_of(Side src, Side dst) {
  if (src == Side::host && dst == Side::device)
    return CopyDirection::h2d;
  if (src == Side::device && dst == Side::host)
    return CopyDirection::d2h;
  if (src == Side::device && dst == Side::device)
    return CopyDirection::d2d;
  return CopyDirection::default_;
}

} // namespace

constexpr std::array<std::string_view, 5> kCopyDirectionNames = {"h2d", "d2h", "d2d", "peer",
                                                                 "default"};
static_assert(kCopyDirectionNames.size() == enum_count(CopyDirection::default_));

std::string_view copy_direction_name(CopyDirection direction) {
  return enum_name(direction, kCopyDirectionNames);
}

std::uint64_t DeviceCounters::gpu_bytes_in_use() const {
  std::uint64_t total = 0;
  for (const auto kind : {MemoryKind::device, MemoryKind::managed, MemoryKind::vmm})
    total += memory[index_of(kind)].used_bytes;
  return total;
}

std::uint64_t ProcessState::gpu_bytes_in_use() const {
  std::uint64_t total = 0;
  for (const auto kind : {MemoryKind::device, MemoryKind::managed, MemoryKind::vmm})
    total += memory[index_of(kind)].used_bytes;
  return total;
}

std::uint64_t ProcessState::launches_total() const {
  std::uint64_t total = 0;
  for (const auto &[key, count] : launch_totals)
    total += count;
  return total;
}

int ProcessState::device_of(std::uint64_t context) const {
  if (context != 0)
    if (const auto it = context_devices.find(context); it != context_devices.end())
      return it->second;
  if (visible_gpus.size() == 1)
    return 0;
  if (!context_devices.empty()) {
    const int first = context_devices.begin()->second;
    if (std::all_of(context_devices.begin(), context_devices.end(),
                    [first](const auto &entry) { return entry.second == first; }))
      return first;
  }
  return kUnknownDevice;
}

std::string ProcessState::gpu_label(int device) const {
  if (device < 0)
    return kUnknownGpu;
  if (static_cast<std::size_t>(device) < visible_gpus.size())
    return visible_gpus[static_cast<std::size_t>(device)];
  return std::to_string(device);
}

CudaState::CudaState(Settings settings)
    : settings_(std::move(settings)), name_budget_(settings_.max_kernel_name_bytes) {}

std::uint64_t CudaState::kernel_names_dropped() const {
  std::uint64_t total = exited_names_dropped_;
  for (const auto &[id, state] : processes_)
    total += state.kernel_names.dropped();
  return total;
}

std::map<ProcessId, ProcessState>::iterator
CudaState::forget(std::map<ProcessId, ProcessState>::iterator it) {
  exited_names_dropped_ += it->second.kernel_names.dropped();
  it->second.kernel_names.clear(name_budget_);
  ++kernels_version_;
  return processes_.erase(it);
}

ProcessId CudaState::process_id(std::uint32_t tgid, std::uint64_t proc_start_ns) const {
  // /proc/<pid>/stat reports start_boottime / (NSEC_PER_SEC / USER_HZ).
  const std::uint64_t ns_per_tick =
      1'000'000'000ull / static_cast<std::uint64_t>(std::max(1L, settings_.ticks_per_second));
  return {static_cast<int>(tgid), proc_start_ns / ns_per_tick};
}

ProcessState &CudaState::process(std::uint32_t tgid, std::uint64_t proc_start_ns) {
  const auto id = process_id(tgid, proc_start_ns);
  const auto [it, created] = processes_.try_emplace(id);
  if (created)
    ++kernels_version_;
  if (created && settings_.read_visible_gpus)
    if (auto labels = settings_.read_visible_gpus(id)) {
      it->second.visible_gpus = std::move(*labels);
      it->second.visible_gpus_read = true;
    }
  return it->second;
}

void CudaState::apply(const Event &event) {
  std::visit([this](const auto &e) { apply(e); }, event);
}

void CudaState::apply(const nt_call_event &event) {
  auto &state = process(event.tgid, event.proc_start_ns);
  const auto api = static_cast<nt_api>(event.api);
  if (event.result != 0)
    ++state.errors[{api, event.result}];
  if (is_sync_api(api)) {
    // A failed sync still waited.
    auto &sync = state.syncs[api];
    const double seconds =
        event.exit_ns > event.enter_ns ? (event.exit_ns - event.enter_ns) / 1e9 : 0.0;
    sync.wait_seconds += seconds;
    ++sync.waits;
    const auto bucket = std::lower_bound(kSyncWaitBuckets.begin(), kSyncWaitBuckets.end(), seconds);
    if (bucket != kSyncWaitBuckets.end())
      ++sync.buckets[static_cast<std::size_t>(bucket - kSyncWaitBuckets.begin())];
    return;
  }
  if (event.result != 0) {
    const auto kind = allocation_kind(api);
    if (kind && *kind != MemoryKind::host_pinned) {
      // Width x height for a pitched request: the pitch is only written on success.
      const std::uint64_t requested =
          api == NT_API_MEM_ALLOC_PITCH ? event.args[2] * event.args[3] : event.args[1];
      ++state.failed_allocations;
      record_change(state, event, MemoryChangeKind::failed_allocation, 0, requested);
    }
    return;
  }
  if (const auto kind = allocation_kind(api))
    apply_allocation(state, event, *kind);
  else if (is_free_api(api))
    apply_free(state, event);
  else if (is_copy_api(api))
    apply_copy(state, event);
  else if (api == NT_API_KERNEL_GET_FUNCTION) {
    // PyTorch asks next to its launches: only a new link changes the series.
    if (state.kernel_names.kernel_of(event.out[0]) != event.args[1]) {
      state.kernel_names.link(event.out[0], event.args[1], max_kernel_names(), name_budget_);
      state.kernels_stale = true;
      ++kernels_version_; // the full names behind a label may change with the series alike
    }
  } else if (const auto device = context_device(api, event.args); device && event.out[0] != 0) {
    state.context_devices[event.out[0]] = *device;
    state.kernels_stale = true; // launches may move to another gpu label
  }
}

std::size_t CudaState::max_kernel_names() const {
  return std::max<std::size_t>(settings_.max_kernel_names_per_process,
                               settings_.max_kernels_per_process);
}

void CudaState::apply(const NameEvent &event) {
  auto &state = process(event.tgid, event.proc_start_ns);
  if (event.result != 0) {
    ++state.errors[{event.api, event.result}];
    return;
  }
  if (event.handle == 0 || event.name.empty())
    return;
  state.kernel_names.add(event.handle, event.name, max_kernel_names(), name_budget_);
  state.kernels_stale = true;
  ++kernels_version_; // the full names behind a label may change with the series alike
}

void CudaState::apply_allocation(ProcessState &state, const nt_call_event &event, MemoryKind kind) {
  const std::uint64_t size =
      event.api == NT_API_MEM_ALLOC_PITCH ? event.out[1] * event.args[3] : event.args[1];
  const std::uint64_t address = event.out[0];
  auto &live = kind == MemoryKind::vmm ? state.live_vmm : state.live;
  auto &counters = state.memory[index_of(kind)];
  // An address handed out again means we missed its free: retire the old entry.
  if (const auto old = live.find(address); old != live.end()) {
    const auto &[old_size, old_kind, old_device] = old->second;
    for (auto *old_counters :
         {&state.memory[index_of(old_kind)], &state.devices[old_device].memory[index_of(old_kind)]})
      old_counters->used_bytes -= std::min(old_counters->used_bytes, old_size);
    live.erase(old);
  }
  const int device = state.device_of(event.context);
  live[address] = {size, kind, device};
  for (auto *added : {&counters, &state.devices[device].memory[index_of(kind)]}) {
    ++added->allocations;
    added->allocated_bytes += size;
    added->used_bytes += size;
    added->peak_bytes = std::max(added->peak_bytes, added->used_bytes);
  }
  if (kind != MemoryKind::host_pinned)
    record_change(state, event, MemoryChangeKind::allocation, address, size);
}

void CudaState::record_change(ProcessState &state, const nt_call_event &event,
                              MemoryChangeKind kind, std::uint64_t address, std::uint64_t bytes) {
  if (state.memory_changes.size() >= kMaxMemoryChangesPerScan) {
    ++state.memory_changes_dropped;
    return;
  }
  const bool free = kind == MemoryChangeKind::free;
  state.memory_changes.push_back({event.exit_ns, kind, address, bytes, state.gpu_bytes_in_use(),
                                  event.result, free ? NT_NO_STACK : event.stack_id,
                                  free ? 0 : event.python_stack});
}

void CudaState::apply_free(ProcessState &state, const nt_call_event &event) {
  const std::uint64_t address = event.args[0];
  if (address == 0)
    return; // freeing NULL is a no-op in the driver
  auto &live = event.api == NT_API_MEM_RELEASE ? state.live_vmm : state.live;
  const auto it = live.find(address);
  if (it == live.end()) {
    ++state.unknown_frees;
    return;
  }
  const auto [size, kind, device] = it->second;
  for (auto *counters :
       {&state.memory[index_of(kind)], &state.devices[device].memory[index_of(kind)]}) {
    ++counters->frees;
    counters->freed_bytes += size;
    counters->used_bytes -= std::min(counters->used_bytes, size);
  }
  live.erase(it);
  if (kind != MemoryKind::host_pinned)
    record_change(state, event, MemoryChangeKind::free, address, size);
}

void CudaState::apply_copy(ProcessState &state, const nt_call_event &event) {
  CopyDirection direction = CopyDirection::default_;
  std::uint64_t bytes = event.args[2];
  switch (event.api) {
  case NT_API_MEMCPY_HTOD:
  case NT_API_MEMCPY_HTOD_ASYNC:
    direction = CopyDirection::h2d;
    break;
  case NT_API_MEMCPY_DTOH:
  case NT_API_MEMCPY_DTOH_ASYNC:
    direction = CopyDirection::d2h;
    break;
  case NT_API_MEMCPY_DTOD:
  case NT_API_MEMCPY_DTOD_ASYNC:
    direction = CopyDirection::d2d;
    break;
  case NT_API_MEMCPY_PEER:
  case NT_API_MEMCPY_PEER_ASYNC:
    direction = CopyDirection::peer;
    bytes = event.args[4];
    break;
  case NT_API_MEMCPY:
  case NT_API_MEMCPY_ASYNC:
    // Unified addressing: the direction is only known when both ends are allocations we saw.
    direction =
        direction_of(side_of(state.live, event.args[1]), side_of(state.live, event.args[0]));
    break;
  default: // 2D / 3D descriptors, read by the return probe
    direction = direction_of(side_of_memory_type(static_cast<std::uint32_t>(event.out[0])),
                             side_of_memory_type(static_cast<std::uint32_t>(event.out[0] >> 32)));
    bytes = event.out[1];
    break;
  }
  state.copy_bytes[index_of(direction)] += bytes;
  ++state.copies[index_of(direction)];
  auto &device = state.devices[state.device_of(event.context)];
  device.copy_bytes[index_of(direction)] += bytes;
  ++device.copies[index_of(direction)];
}

void CudaState::set_estimated_launches(const std::set<int> &pids) {
  for (auto &[id, state] : processes_)
    state.launches_estimated = pids.contains(id.pid);
}

void CudaState::set_launch_counts(const std::vector<LaunchCount> &counts) {
  // Each process's entries, gathered by sorting one list rather than in a map of maps (50 000
  // tree nodes a scan at 1 000 processes x 50 kernels).
  struct Entry {
    ProcessId id;
    ProcessState::LaunchKey key;
    std::uint64_t count = 0;
  };
  std::vector<Entry> entries;
  entries.reserve(counts.size());
  for (const auto &count : counts) {
    process(count.tgid, count.proc_start_ns); // a process may first show up here
    entries.push_back({process_id(count.tgid, count.proc_start_ns),
                       {count.api, count.handle, count.context},
                       count.count});
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return a.id != b.id ? a.id < b.id : a.key < b.key;
  });
  auto next = entries.begin();
  std::vector<std::pair<ProcessState::LaunchKey, std::uint64_t>> fresh;
  for (auto &[id, state] : processes_) {
    fresh.clear();
    for (; next != entries.end() && next->id == id; ++next) {
      if (!fresh.empty() && fresh.back().first == next->key)
        fresh.back().second = next->count; // the same key twice: the last read counts
      else
        fresh.emplace_back(next->key, next->count);
    }
    if (std::equal(fresh.begin(), fresh.end(), state.launch_totals.begin(),
                   state.launch_totals.end()) &&
        !state.kernels_stale)
      continue; // an idle process: nothing its series are built from changed
    state.launch_totals = decltype(state.launch_totals)::from_unsorted(fresh);
    rebuild_kernels(state);
  }
}

namespace {

void add_series(KernelSeries &target, KernelSeries &series) {
  target.launches += series.launches;
  for (const auto &[device, launches] : series.launches_by_device)
    target.launches_by_device[device] += launches;
}

void add_names(FlatSet<std::string> &target, FlatSet<std::string> &names) { target.merge(names); }

// `labelled` as a map by label, the values of equal labels merged by `add`.
template <typename Value, typename Add>
FlatMap<std::string, Value> merged_by_label(std::vector<std::pair<std::string, Value>> labelled,
                                            Add add) {
  std::stable_sort(labelled.begin(), labelled.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<std::pair<std::string, Value>> merged;
  merged.reserve(labelled.size());
  for (auto &[label, value] : labelled) {
    if (!merged.empty() && merged.back().first == label)
      add(merged.back().second, value);
    else
      merged.emplace_back(std::move(label), std::move(value));
  }
  auto map = FlatMap<std::string, Value>::from_unsorted(std::move(merged));
  map.shrink_to_fit();
  return map;
}

} // namespace

bool CudaState::has_launches(int pid) const {
  for (auto it = processes_.lower_bound(ProcessId{pid, 0});
       it != processes_.end() && it->first.pid == pid; ++it)
    if (!it->second.launch_totals.empty())
      return true;
  return false;
}

bool CudaState::has_unnamed_launches(int pid) const {
  for (auto it = processes_.lower_bound(ProcessId{pid, 0});
       it != processes_.end() && it->first.pid == pid; ++it) {
    const auto &state = it->second;
    if (state.kernel_names.dropped() > 0)
      continue;
    for (const auto &[key, count] : state.launch_totals)
      if (key.api != NT_API_GRAPH_LAUNCH && !state.kernel_names.find(key.handle))
        return true;
  }
  return false;
}

std::pair<std::string_view, const KernelName *>
ProcessState::launch_label(const LaunchKey &key) const {
  if (key.api == NT_API_GRAPH_LAUNCH)
    return {kGraphLaunch, nullptr};
  if (const KernelName *name = kernel_names.find(key.handle))
    return {name->short_name, name};
  // Once names were dropped, an unnamed handle may be one of them: [other], not [unresolved].
  return {kernel_names.dropped() > 0 ? kOtherKernels : kUnresolvedKernel, nullptr};
}

std::string_view ProcessState::series_label(std::string_view label) const {
  return is_pseudo_kernel(label) || promoted.contains(label) ? label
                                                             : std::string_view(kOtherKernels);
}

FlatMap<std::string, FlatSet<std::string>> ProcessState::full_names() const {
  std::vector<std::pair<std::string, FlatSet<std::string>>> labelled;
  labelled.reserve(launch_totals.size());
  for (const auto &[key, count] : launch_totals) {
    const auto [label, name] = launch_label(key);
    labelled.emplace_back(std::string(series_label(label)),
                          name ? FlatSet<std::string>{name->full_name} : FlatSet<std::string>{});
  }
  return merged_by_label(std::move(labelled), add_names);
}

void CudaState::rebuild_kernels(ProcessState &state) {
  state.kernels_stale = false;
  std::vector<std::pair<std::string, KernelSeries>> labelled;
  labelled.reserve(state.launch_totals.size());
  for (const auto &[key, count] : state.launch_totals) {
    KernelSeries series;
    series.launches = count;
    series.launches_by_device[state.device_of(key.context)] = count;
    labelled.emplace_back(state.launch_label(key).first, std::move(series));
  }
  auto by_label = merged_by_label(std::move(labelled), add_series);
  // Fill free slots with the busiest kernels not yet promoted; promoted ones stay.
  std::vector<std::pair<std::uint64_t, std::string>> candidates;
  for (const auto &[label, series] : by_label)
    if (!is_pseudo_kernel(label) && !state.promoted.contains(label))
      candidates.emplace_back(series.launches, label);
  std::sort(candidates.begin(), candidates.end(), [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  for (const auto &[launches, label] : candidates) {
    if (state.promoted.size() >= settings_.max_kernels_per_process)
      break;
    state.promoted.insert(label);
  }
  state.promoted.shrink_to_fit(); // filled once, kept for the process's life
  // Merged, not assigned: unnamed launches of a process that dropped names are [other] too.
  std::vector<std::pair<std::string, KernelSeries>> kept;
  kept.reserve(by_label.size());
  for (auto &[label, series] : by_label)
    kept.emplace_back(state.series_label(label), std::move(series));
  auto kernels = merged_by_label(std::move(kept), add_series);
  if (kernels != state.kernels) {
    state.kernels = std::move(kernels);
    ++kernels_version_;
  }
}

void CudaState::set_inflight_calls(const std::vector<InflightCall> &calls, std::uint64_t now_ns) {
  for (auto &[id, state] : processes_) {
    for (auto &[api, sync] : state.syncs)
      sync.in_progress_seconds = 0;
    state.longest_call_seconds = 0;
    state.longest_call_api = NT_API_NONE;
  }
  for (const auto &call : calls) {
    auto &state = process(call.tgid, call.proc_start_ns);
    const double age = now_ns > call.enter_ns ? (now_ns - call.enter_ns) / 1e9 : 0.0;
    if (age > state.longest_call_seconds) {
      state.longest_call_seconds = age;
      state.longest_call_api = call.api;
    }
    if (!is_sync_api(call.api))
      continue;
    auto &sync = state.syncs[call.api];
    sync.in_progress_seconds = std::max(sync.in_progress_seconds, age);
  }
}

void CudaState::tick(double seconds_since_last_tick) {
  if (seconds_since_last_tick <= 0)
    return;
  const double alpha = 1.0 - std::exp(-seconds_since_last_tick /
                                      std::max(1e-3, settings_.throughput_window_seconds));
  for (auto &[id, state] : processes_) {
    for (std::size_t i = 0; i < kCopyDirections; ++i) {
      const double rate =
          (state.copy_bytes[i] - state.copy_bytes_at_last_tick[i]) / seconds_since_last_tick;
      state.copy_throughput[i] += alpha * (rate - state.copy_throughput[i]);
      state.copy_bytes_at_last_tick[i] = state.copy_bytes[i];
    }
  }
}

std::vector<ProcessId>
CudaState::update_processes(const DiscoveryResult &discovery,
                            const std::function<bool(const ProcessId &)> &is_alive) {
  std::set<ProcessId> seen;
  for (const auto &found : discovery.processes) {
    const auto [it, created] = processes_.try_emplace(found.id);
    auto &state = it->second;
    if (created || state.comm != found.comm || !(state.container == found.container))
      ++kernels_version_; // the kernels document shows comm and container
    state.comm = found.comm;
    state.exe = found.exe;
    state.container = found.container;
    state.discovered = true;
    seen.insert(found.id);
  }
  std::vector<ProcessId> removed;
  for (auto it = processes_.begin(); it != processes_.end();) {
    if (!seen.contains(it->first) && !is_alive(it->first)) {
      removed.push_back(it->first);
      exited_.push_back({it->first, it->second.comm, it->second.gpu_bytes_in_use()});
      it = forget(it);
    } else {
      ++it;
    }
  }
  return removed;
}

std::vector<ProcessId> CudaState::processes_without_visible_gpus() const {
  std::vector<ProcessId> ids;
  for (const auto &[id, state] : processes_)
    if (!state.visible_gpus_read)
      ids.push_back(id);
  return ids;
}

void CudaState::set_visible_gpus(const ProcessId &id, std::vector<std::string> labels) {
  const auto it = processes_.find(id);
  if (it == processes_.end())
    return;
  it->second.visible_gpus = std::move(labels);
  it->second.visible_gpus_read = true;
  it->second.kernels_stale = true; // gpu labels of its series
}

void CudaState::forget_images(const std::vector<ProcessId> &ids, bool replaced) {
  for (const auto &id : ids)
    if (const auto it = processes_.find(id); it != processes_.end()) {
      exited_.push_back({id, it->second.comm, it->second.gpu_bytes_in_use(), replaced});
      forget(it);
    }
}

std::vector<ExitedProcess> CudaState::take_exited() { return std::exchange(exited_, {}); }

std::map<ProcessId, std::vector<MemoryChange>> CudaState::take_memory_changes() {
  std::map<ProcessId, std::vector<MemoryChange>> changes;
  for (auto &[id, state] : processes_)
    if (!state.memory_changes.empty())
      changes.emplace(id, std::exchange(state.memory_changes, {}));
  return changes;
}

} // namespace neutracer
