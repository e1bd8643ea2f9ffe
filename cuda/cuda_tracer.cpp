// SPDX-License-Identifier: Apache-2.0
#include "cuda/cuda_tracer.h"

#include <atomic>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <thread>
#include <unistd.h>

#include "common/bpf_errors.h"
#include "common/bpf_skeleton.h"
#include "common/descriptor_reserve.h"
#include "common/elf_symbols.h"
#include "common/open_file_limit.h"
#include "cuda/cuda_api_table.h"
#include "cuda/entry_instruction.h"
#include "cuda/nccl_symbols.h"
#include "cuda/trap_calibration.h"
// The skeleton holds <bpf/usdt.bpf.h>'s kconfig flag as C's _Bool, which C++ spells bool (g++
// takes _Bool as an extension, clang++ does not).
#define _Bool bool
#include "cuda_calls.skel.h"
#undef _Bool
#include "cuda_launch.skel.h"

namespace neutracer {
namespace {

constexpr const char *kKernelNeeds =
    "the kernel needs BTF, uprobes and BPF ring buffers (Linux 5.15+)";

// Walks a hash map key by key (two syscalls per entry): for small maps, and where batched
// lookups are unavailable.
template <typename Key, typename Value, typename Fn> void for_each_entry(int fd, Fn &&fn) {
  Key key{}, next{};
  const Key *previous = nullptr;
  while (bpf_map_get_next_key(fd, previous, &next) == 0) {
    Value value{};
    if (bpf_map_lookup_elem(fd, &next, &value) == 0)
      fn(next, value);
    key = next;
    previous = &key;
  }
}

// Reads a whole hash map: batched (one syscall per 4096 entries instead of two per entry), or
// key by key where batched lookups are unavailable.
template <typename Key, typename Value, typename Fn> void read_hash_map(int fd, Fn &&add) {
  constexpr std::uint32_t kChunk = 4096;
  std::vector<Key> keys(kChunk);
  std::vector<Value> values(kChunk);
  std::vector<std::pair<Key, Value>> entries;
  alignas(8) unsigned char in_batch[sizeof(Key)] = {};
  alignas(8) unsigned char out_batch[sizeof(Key)] = {};
  bool first = true;
  for (;;) {
    std::uint32_t count = kChunk;
    const int error = bpf_map_lookup_batch(fd, first ? nullptr : in_batch, out_batch, keys.data(),
                                           values.data(), &count, nullptr);
    for (std::uint32_t i = 0; i < count && (error == 0 || error == -ENOENT); ++i)
      entries.emplace_back(keys[i], values[i]);
    if (error == -ENOENT) {
      for (const auto &[key, value] : entries)
        add(key, value);
      return;
    }
    if (error != 0)
      break; // not supported here (or a bucket larger than a chunk): walk the keys instead
    std::memcpy(in_batch, out_batch, sizeof in_batch);
    first = false;
  }
  for_each_entry<Key, Value>(fd, add);
}

// The most frames the kernel walks (kernel.perf_event_max_stack); a stack map may not hold more.
std::uint32_t kernel_max_stack() {
  std::uint32_t value = NT_STACK_MAX_DEPTH;
  if (FILE *file = std::fopen("/proc/sys/kernel/perf_event_max_stack", "re")) {
    if (std::fscanf(file, "%u", &value) != 1)
      value = NT_STACK_MAX_DEPTH;
    std::fclose(file);
  }
  return value;
}

} // namespace

void CudaTracer::LaunchDeleter::operator()(cuda_launch *skeleton) const {
  cuda_launch__destroy(skeleton);
}
void CudaTracer::CallsDeleter::operator()(cuda_calls *skeleton) const {
  cuda_calls__destroy(skeleton);
}
void CudaTracer::RingBufferDeleter::operator()(ring_buffer *rb) const { ring_buffer__free(rb); }

CudaTracer::CudaTracer(const TracerSettings &settings)
    : per_process_launch_probes_(settings.per_process_launch_probes) {
  route_libbpf_logs_to_spdlog();
  try {
    multi_links_ = true;
    load(settings);
    // Kernels before 6.6 may load a program meant for uprobe_multi links and refuse only the
    // link: ask for one, on a function of the daemon's own, before relying on them.
    if (!uprobe_multi_links_work())
      throw TracerError(TracerError::Reason::other,
                        "a uprobe_multi link was refused: " + errno_text(errno));
    return;
  } catch (const TracerError &error) {
    if (error.reason == TracerError::Reason::permission)
      throw;
    if (per_process_launch_probes_)
      spdlog::warn("adaptive launch counting needs uprobe_multi links (Linux 6.6 or later), "
                   "which this kernel refused ({}): counting every launch instead",
                   error.what());
    else
      spdlog::info("no uprobe_multi links on this kernel ({}): one perf-event uprobe per "
                   "probe, which take seconds to remove at stop",
                   error.what());
    allocator_probes_.reset();
    ring_buffer_.reset();
    calls_.reset();
    launch_.reset();
    per_process_launch_probes_ = false;
    multi_links_ = false;
  }
  load(settings);
}

void CudaTracer::load(const TracerSettings &settings) {
  stack_depth_ = settings.stack_depth;
  if (const auto most = kernel_max_stack(); stack_depth_ > most) {
    spdlog::warn("stacks.max_depth {} is more than this kernel walks (kernel.perf_event_max_stack "
                 "= {}): keeping {} frames per stack",
                 stack_depth_, most, most);
    stack_depth_ = most;
  }
  const bool stacks = stack_depth_ > 0;
  const auto multi = [&](bpf_program *program) {
    if (multi_links_)
      bpf_program__set_expected_attach_type(program,
                                            static_cast<bpf_attach_type>(kUprobeMultiAttachType));
  };
  launch_.reset(open_and_load_skeleton<cuda_launch>(
      "cuda_launch", cuda_launch__open_opts, cuda_launch__load, cuda_launch__destroy,
      [&](cuda_launch *skeleton) {
        bpf_map__set_max_entries(skeleton->maps.launches, settings.launch_map_entries);
        skeleton->rodata->gated = per_process_launch_probes_ ? 1 : 0;
        // Without stacks the maps shrink to one entry: a stack map is allocated whole.
        bpf_map__set_max_entries(skeleton->maps.stacks, stacks ? settings.stack_map_entries : 1);
        bpf_map__set_value_size(skeleton->maps.stacks,
                                (stacks ? stack_depth_ : 1) * sizeof(std::uint64_t));
        skeleton->rodata->capture_stacks = stacks ? 1 : 0;
        const std::uint32_t every = stacks ? settings.launch_stack_every : 0;
        skeleton->rodata->launch_stack_every = every;
        bpf_map__set_max_entries(skeleton->maps.launch_stacks,
                                 every ? settings.launch_stack_entries : 1);
        if (!stacks) // allocated whole: one entry each when no stack is taken
          for (bpf_map *map : {skeleton->maps.python_stacks, skeleton->maps.python_processes,
                               skeleton->maps.python_thread_states})
            bpf_map__set_max_entries(map, 1);
        multi(skeleton->progs.launch_handle_arg1);
        multi(skeleton->progs.launch_handle_arg2);
      },
      kKernelNeeds));
  calls_.reset(open_and_load_skeleton<cuda_calls>(
      "cuda_calls", cuda_calls__open_opts, cuda_calls__load, cuda_calls__destroy,
      [&](cuda_calls *skeleton) {
        bpf_map__set_max_entries(skeleton->maps.events, settings.ring_buffer_bytes);
        skeleton->rodata->allocator_sample_bytes = settings.allocator_sample_bytes;
        for (bpf_program *program :
             {skeleton->progs.call_enter, skeleton->progs.call_exit, skeleton->progs.name_exit,
              skeleton->progs.context_set, skeleton->progs.context_push,
              skeleton->progs.context_pop, skeleton->progs.nccl_enter, skeleton->progs.nccl_exit})
          multi(program);
        if (multi_links_) {
          multi(skeleton->progs.sampled_call_enter);
          multi(skeleton->progs.sampled_call_exit);
        } else {
          bpf_program__set_autoload(skeleton->progs.sampled_call_enter, false);
          bpf_program__set_autoload(skeleton->progs.sampled_call_exit, false);
        }
        // One map of current contexts: set by cuda_calls' probes, read by launches.
        if (const int error = bpf_map__reuse_fd(skeleton->maps.thread_contexts,
                                                bpf_map__fd(launch_->maps.thread_contexts));
            error != 0)
          throw TracerError(TracerError::Reason::other,
                            "cannot share the thread context map: " + errno_text(-error));
        // One stack map: ids from either program name the same stacks. One set of Python maps:
        // the processes' offsets are written once, stack keys from either are read in one map.
        skeleton->rodata->capture_stacks = stacks ? 1 : 0;
        for (const auto &[mine, theirs] :
             {std::pair{skeleton->maps.stacks, launch_->maps.stacks},
              std::pair{skeleton->maps.python_stacks, launch_->maps.python_stacks},
              std::pair{skeleton->maps.python_processes, launch_->maps.python_processes},
              std::pair{skeleton->maps.python_thread_states, launch_->maps.python_thread_states}})
          if (const int error = bpf_map__reuse_fd(mine, bpf_map__fd(theirs)); error != 0)
            throw TracerError(TracerError::Reason::other, std::string("cannot share the map ") +
                                                              bpf_map__name(mine) + ": " +
                                                              errno_text(-error));
      },
      kKernelNeeds));
  ring_buffer_.reset(ring_buffer__new(
      bpf_map__fd(calls_->maps.events),
      [](void *context, void *data, size_t size) -> int {
        const auto *self = static_cast<const CudaTracer *>(context);
        if (self->sink_)
          (*self->sink_)(std::span<const std::byte>(static_cast<const std::byte *>(data), size));
        return 0;
      },
      this, nullptr));
  if (!ring_buffer_)
    throw TracerError(TracerError::Reason::other,
                      "cannot set up the BPF ring buffer: " + errno_text(errno));
  allocator_probes_ = std::make_unique<AllocatorProbes>(
      calls_->progs.torch_block_alloc, calls_->progs.torch_block_free,
      bpf_map__fd(calls_->maps.sampled_blocks), reaper_);
}

std::string CudaTracer::attach_allocator_probes(int pid, const std::string &library_path) {
  const DescriptorReserve reserve;
  if (!reserve.full())
    return "too few free file descriptors";
  return allocator_probes_->attach(pid, library_path);
}

void CudaTracer::detach_allocator_probes(int pid) { allocator_probes_->detach(pid); }

CudaTracer::~CudaTracer() {
  // Links first: no probe may fire into programs being torn down.
  std::vector<Link> links;
  for (auto &[id, library] : attachments_) {
    std::move(library.probes.begin(), library.probes.end(), std::back_inserter(links));
    close_in_background(std::move(library.multi));
  }
  attachments_.clear();
  // Closing a uprobe_multi link detaches it, after RCU grace periods: one after another, the
  // 324 links of 200 processes held SIGTERM for 13 s (tests/bench/fd_limit.sh, TERM_AT=running
  // now takes 1.4 s); the reaper closes them together.
  for (auto &[pid, process_links] : process_launch_links_)
    close_in_background(std::move(process_links));
  process_launch_links_.clear();
  destroy_links(std::move(links));
}

AttachSummary CudaTracer::attach(const CudaLibrary &library) {
  AttachSummary summary;
  if (attachments_.contains(library.id))
    return summary;
  // Held while attaching: the links run out before the descriptors the scan and the HTTP
  // server need, which are free again once it goes.
  const DescriptorReserve reserve;
  if (!reserve.full()) {
    ++attaches_put_off_;
    summary.out_of_descriptors = summary.retry = true;
    return summary;
  }
  std::vector<std::string> names;
  if (library.kind == LibraryKind::nccl)
    for (const auto &probe : nccl_symbols())
      names.emplace_back(probe.symbol);
  else
    for (const auto &probe : probed_symbols())
      names.emplace_back(probe.symbol);
  const auto offsets = find_symbol_offsets(library.open_path, names);
  if (!offsets.error.empty()) {
    summary.errors = 1;
    summary.first_error = offsets.error;
    summary.out_of_descriptors = summary.retry = out_of_descriptors_now();
    return summary;
  }
  summary.missing_symbols = offsets.missing.size();
  std::vector<Link> links;
  // The first failure is named; libbpf falls back to tracefs uprobes when it cannot open the
  // uprobe PMU's type file, so out of descriptors fails the same way for both kinds of probe.
  const auto note_error = [&](bpf_program *program, int error) {
    summary.out_of_descriptors |= is_out_of_descriptors(error);
    if (summary.errors++ == 0)
      summary.first_error = "attaching " + std::string(bpf_program__name(program)) + " to " +
                            library.path + ": " + errno_text(error) +
                            (is_permission_error(error) ? "; " + permission_hint() : "");
  };
  // With uprobe_multi links: gathered per (program, direction), attached below.
  std::map<std::pair<bpf_program *, bool>, LinkSites> global_sites;
  // `cookie`: the symbol's nt_api (driver) or nt_nccl_op (NCCL).
  const auto attach_one = [&](bpf_program *program, std::uint64_t offset, std::uint64_t cookie,
                              bool retprobe) {
    if (multi_links_) {
      auto &sites = global_sites[{program, retprobe}];
      sites.offsets.push_back(offset);
      sites.cookies.push_back(cookie);
      return;
    }
    LIBBPF_OPTS(bpf_uprobe_opts, options, .bpf_cookie = cookie, .retprobe = retprobe);
    bpf_link *link =
        bpf_program__attach_uprobe_opts(program, -1, library.open_path.c_str(), offset, &options);
    if (!link) {
      note_error(program, errno);
      return;
    }
    links.emplace_back(link);
  };
  LaunchLibrary launch_library;
  const auto per_process_probe = [&](bpf_program *program, std::uint64_t offset, nt_api api,
                                     bool retprobe = false) {
    auto &sites = launch_library.links[{program, retprobe}];
    sites.offsets.push_back(offset);
    sites.cookies.push_back(api);
  };
  const auto launch_probe = [&](bpf_program *program, std::uint64_t offset, nt_api api) {
    if (per_process_launch_probes_)
      per_process_probe(program, offset, api);
    else
      attach_one(program, offset, api, false);
  };
  if (library.kind == LibraryKind::nccl)
    for (const auto &probe : nccl_symbols())
      if (const auto found = offsets.found.find(std::string(probe.symbol));
          found != offsets.found.end()) {
        attach_one(calls_->progs.nccl_enter, found->second, probe.op, false);
        attach_one(calls_->progs.nccl_exit, found->second, probe.op, true);
      }
  const UniqueFd code(::open(library.open_path.c_str(), O_RDONLY | O_CLOEXEC));
  for (const auto &probe : probed_symbols()) {
    const auto found = offsets.found.find(std::string(probe.symbol));
    if (found == offsets.found.end())
      continue;
    const bool hot = probe.program == ProbeProgram::launch_handle_arg1 ||
                     probe.program == ProbeProgram::launch_handle_arg2 ||
                     is_sampled_call_api(probe.api);
    if (hot) {
      const auto bytes = code ? read_entry_bytes(code.get(), found->second) : std::nullopt;
      summary.hot_entries.push_back(
          {std::string(probe.symbol),
           bytes ? classify_entry_instruction(*bytes) : EntryInstruction{"unreadable", false}});
    }
    switch (probe.program) {
    case ProbeProgram::launch_handle_arg1:
      launch_probe(launch_->progs.launch_handle_arg1, found->second, probe.api);
      break;
    case ProbeProgram::launch_handle_arg2:
      launch_probe(launch_->progs.launch_handle_arg2, found->second, probe.api);
      break;
    case ProbeProgram::call:
      if (multi_links_ && is_sampled_call_api(probe.api)) {
        per_process_probe(calls_->progs.sampled_call_enter, found->second, probe.api);
        per_process_probe(calls_->progs.sampled_call_exit, found->second, probe.api, true);
        break;
      }
      attach_one(calls_->progs.call_enter, found->second, probe.api, false);
      attach_one(calls_->progs.call_exit, found->second, probe.api, true);
      break;
    case ProbeProgram::name:
      attach_one(calls_->progs.call_enter, found->second, probe.api, false);
      attach_one(calls_->progs.name_exit, found->second, probe.api, true);
      break;
    case ProbeProgram::context_set:
      attach_one(calls_->progs.context_set, found->second, probe.api, false);
      break;
    case ProbeProgram::context_push:
      attach_one(calls_->progs.context_push, found->second, probe.api, false);
      break;
    case ProbeProgram::context_pop:
      attach_one(calls_->progs.context_pop, found->second, probe.api, false);
      break;
    }
  }
  LibraryLinks attached;
  for (const auto &[key, sites] : global_sites) {
    // pid 0: every process that maps the file.
    auto link = attach_uprobe_multi(bpf_program__fd(key.first), library.open_path, 0, sites.offsets,
                                    sites.cookies, key.second);
    if (!link) {
      note_error(key.first, errno);
      continue;
    }
    attached.multi.push_back(std::move(link));
    attached.probe_count += sites.offsets.size();
  }
  if (summary.errors > 0 && !summary.out_of_descriptors)
    summary.out_of_descriptors = out_of_descriptors_now();
  // The file was opened through one process's root: if that process exited mid-attach, the
  // rest failed. Keep nothing, so the next scan attaches again through a live process. Out of
  // descriptors, keep nothing either: a library half attached would never be attached whole.
  if (summary.errors > 0 &&
      (summary.out_of_descriptors || ::access(library.open_path.c_str(), F_OK) != 0)) {
    destroy_links(std::move(links));
    close_in_background(std::move(attached.multi));
    summary.probes = 0;
    summary.retry = true;
    return summary;
  }
  attached.probe_count += links.size();
  attached.probes = std::move(links);
  summary.probes = attached.probe_count;
  if (attached.probe_count > 0)
    attachments_.emplace(library.id, std::move(attached));
  if (!launch_library.links.empty()) {
    launch_library.file = UniqueFd(::open(library.open_path.c_str(), O_PATH | O_CLOEXEC));
    if (launch_library.file)
      launch_libraries_.insert_or_assign(library.id, std::move(launch_library));
  }
  return summary;
}

std::size_t CudaTracer::attach_launch_probes(int pid, const std::vector<LibraryId> &libraries,
                                             bool with_name_calls, std::string &first_error) {
  if (const auto held = process_launch_links_.find(pid);
      held != process_launch_links_.end() && !held->second.empty())
    return held->second.size();
  const DescriptorReserve reserve; // as in attach()
  if (!reserve.full()) {
    ++attaches_put_off_; // no error: the scan's fd limit message says it, not one per process
    return 0;
  }
  auto &links = process_launch_links_[pid];
  for (const auto &id : libraries) {
    const auto library = launch_libraries_.find(id);
    if (library == launch_libraries_.end())
      continue;
    // The held descriptor names the file whichever process it was found through.
    const auto path = "/proc/self/fd/" + std::to_string(library->second.file.get());
    for (const auto &[key, sites] : library->second.links) {
      const bool name_call = key.first == calls_->progs.sampled_call_enter ||
                             key.first == calls_->progs.sampled_call_exit;
      if (name_call && !with_name_calls)
        continue;
      auto link = attach_uprobe_multi(bpf_program__fd(key.first), path, pid, sites.offsets,
                                      sites.cookies, key.second);
      if (link)
        links.push_back(std::move(link));
      else if (errno != ESRCH && first_error.empty()) // ESRCH: the process is gone
        first_error = "attaching " + std::string(bpf_program__name(key.first)) + " for pid " +
                      std::to_string(pid) + ": " + errno_text(errno);
    }
  }
  const auto attached = links.size();
  if (attached == 0)
    process_launch_links_.erase(pid);
  return attached;
}

std::optional<UniqueFd> CudaTracer::probe_own_function() const {
  const auto target = locate_code(trap_calibration_target());
  if (!target)
    return std::nullopt;
  const std::uint64_t offset = target->offset, cookie = 0;
  return attach_uprobe_multi(bpf_program__fd(launch_->progs.launch_handle_arg1), target->path,
                             getpid(), {&offset, 1}, {&cookie, 1}, false);
}

bool CudaTracer::uprobe_multi_links_work() const {
  const auto link = probe_own_function();
  return !link || static_cast<bool>(*link); // nothing to try it on: the first attach will say
}

std::optional<double> CudaTracer::measure_launch_trap_ns() {
  if (!per_process_launch_probes_ || !locate_code(trap_calibration_target()))
    return std::nullopt;
  // The gated launch program, with a gate open for the daemon: each hit runs the whole counting
  // path (counter, context, gate times, stack countdown), as a counted launch does; what it
  // counted for the daemon is deleted after, so the daemon never appears as a CUDA process.
  const auto self = static_cast<std::uint32_t>(getpid());
  set_launch_gate(self, true);
  const auto cost = measure_trap_cost_ns([&] { return probe_own_function().value_or(UniqueFd()); });
  forget_launch_gate(self);
  std::vector<LaunchCount> own_counts;
  for (const auto &count : read_launch_counts())
    if (count.tgid == self)
      own_counts.push_back(count);
  delete_launch_counts(own_counts);
  std::vector<LaunchStackCount> own_stacks;
  std::vector<std::int32_t> own_stack_ids;
  for (const auto &stack : read_launch_stacks())
    if (stack.tgid == self) {
      own_stacks.push_back(stack);
      own_stack_ids.push_back(stack.stack_id);
    }
  delete_launch_stacks(own_stacks);
  delete_stacks(own_stack_ids);
  return cost;
}

void CudaTracer::detach_launch_probes(int pid) {
  // Closing waits for an RCU grace period: in the background.
  reaper_.reap_process(process_launch_links_, pid);
}

void CudaTracer::set_launch_gate(std::uint32_t tgid, bool open) {
  const int fd = bpf_map__fd(launch_->maps.launch_gates);
  nt_launch_gate gate{};
  // Closing keeps the window's hits: read, then written back with the gate shut. A launch
  // between the two is counted but missing from the hits, which only time the window.
  if (!open)
    bpf_map_lookup_elem(fd, &tgid, &gate);
  gate.open = open ? 1 : 0;
  bpf_map_update_elem(fd, &tgid, &gate, BPF_ANY);
}

LaunchGateHits CudaTracer::launch_gate_hits(std::uint32_t tgid) const {
  nt_launch_gate gate{};
  if (bpf_map_lookup_elem(bpf_map__fd(launch_->maps.launch_gates), &tgid, &gate) != 0)
    return {};
  return {gate.launches, gate.first_ns, gate.last_ns};
}

// A return probe removed while its call ran never fires: the call's entry would stay in the
// inflight map and look like a hung call.
void CudaTracer::drop_sampled_calls(std::uint32_t tgid) {
  std::vector<InflightCall> stale;
  for (const auto &call : read_inflight_calls())
    if (call.tgid == tgid && is_sampled_call_api(call.api))
      stale.push_back(call);
  delete_inflight_calls(stale);
}

void CudaTracer::forget_launch_gate(std::uint32_t tgid) {
  bpf_map_delete_elem(bpf_map__fd(launch_->maps.launch_gates), &tgid);
}

void CudaTracer::detach(const LibraryId &id) {
  const auto it = attachments_.find(id);
  if (it == attachments_.end())
    return;
  reaper_.reap(std::move(it->second.probes));
  close_in_background(std::move(it->second.multi));
  attachments_.erase(it);
  launch_libraries_.erase(id);
}

void CudaTracer::close_in_background(std::vector<UniqueFd> links) {
  // Each close waits for an RCU grace period: concurrently, off the main loop.
  for (auto &link : links)
    if (link)
      reaper_.run([held = std::make_shared<UniqueFd>(std::move(link))] { held->reset(); });
}

std::vector<LibraryId> CudaTracer::attached() const {
  std::vector<LibraryId> ids;
  for (const auto &[id, links] : attachments_)
    ids.push_back(id);
  return ids;
}

std::size_t CudaTracer::probe_count() const {
  std::size_t count = 0;
  for (const auto &[id, library] : attachments_)
    count += library.probe_count;
  return count;
}

void CudaTracer::poll(std::chrono::milliseconds timeout,
                      const std::function<void(std::span<const std::byte>)> &sink) {
  sink_ = &sink;
  ring_buffer__poll(ring_buffer_.get(), static_cast<int>(timeout.count()));
  ring_buffer__consume(ring_buffer_.get());
  sink_ = nullptr;
}

std::vector<LaunchCount> CudaTracer::read_launch_counts() const {
  std::vector<LaunchCount> counts;
  read_hash_map<nt_launch_key, std::uint64_t>(
      bpf_map__fd(launch_->maps.launches), [&](const nt_launch_key &key, std::uint64_t value) {
        counts.push_back({key.tgid, key.proc_start_ns, static_cast<nt_api>(key.api), key.handle,
                          value, key.context});
      });
  return counts;
}

std::optional<std::vector<std::uint64_t>> CudaTracer::read_stack(std::int32_t id) const {
  if (stack_depth_ == 0 || id < 0)
    return std::nullopt;
  std::vector<std::uint64_t> frames(stack_depth_);
  const auto key = static_cast<std::uint32_t>(id);
  if (bpf_map_lookup_elem(bpf_map__fd(launch_->maps.stacks), &key, frames.data()) != 0)
    return std::nullopt;
  // The kernel zero-fills past the frames it walked.
  while (!frames.empty() && frames.back() == 0)
    frames.pop_back();
  return frames;
}

std::optional<nt_python_stack> CudaTracer::read_python_stack(std::uint64_t key) const {
  nt_python_stack stack{};
  if (stack_depth_ == 0 || key == 0 ||
      bpf_map_lookup_elem(bpf_map__fd(launch_->maps.python_stacks), &key, &stack) != 0)
    return std::nullopt;
  stack.depth = std::min<std::uint32_t>(stack.depth, NT_PYTHON_FRAMES_MAX);
  return stack;
}

void CudaTracer::delete_python_stack(std::uint64_t key) {
  if (stack_depth_ > 0)
    bpf_map_delete_elem(bpf_map__fd(launch_->maps.python_stacks), &key);
}

bool CudaTracer::set_python_process(std::uint32_t tgid, const nt_python_offsets &offsets) {
  return stack_depth_ > 0 && bpf_map_update_elem(bpf_map__fd(launch_->maps.python_processes), &tgid,
                                                 &offsets, BPF_ANY) == 0;
}

void CudaTracer::forget_python_process(std::uint32_t tgid) {
  if (stack_depth_ > 0)
    bpf_map_delete_elem(bpf_map__fd(launch_->maps.python_processes), &tgid);
}

std::vector<std::int32_t> CudaTracer::stack_ids() const {
  std::vector<std::int32_t> ids;
  if (stack_depth_ == 0)
    return ids;
  const int fd = bpf_map__fd(launch_->maps.stacks);
  std::uint32_t key = 0, next = 0;
  const std::uint32_t *previous = nullptr;
  while (bpf_map_get_next_key(fd, previous, &next) == 0) {
    ids.push_back(static_cast<std::int32_t>(next));
    key = next;
    previous = &key;
  }
  return ids;
}

void CudaTracer::delete_stacks(const std::vector<std::int32_t> &ids) {
  const int fd = bpf_map__fd(launch_->maps.stacks);
  for (const auto id : ids) {
    const auto key = static_cast<std::uint32_t>(id);
    bpf_map_delete_elem(fd, &key);
  }
}

std::vector<LaunchStackCount> CudaTracer::read_launch_stacks() const {
  std::vector<LaunchStackCount> counts;
  if (stack_depth_ == 0)
    return counts;
  read_hash_map<nt_launch_stack_key, std::uint64_t>(
      bpf_map__fd(launch_->maps.launch_stacks),
      [&](const nt_launch_stack_key &key, std::uint64_t samples) {
        counts.push_back(
            {key.tgid, key.proc_start_ns, key.stack_id, key.caller, samples, key.python_stack});
      });
  return counts;
}

void CudaTracer::delete_launch_stacks(const std::vector<LaunchStackCount> &entries) {
  for (const auto &e : entries) {
    const nt_launch_stack_key key{e.tgid, e.stack_id, e.proc_start_ns, e.caller, e.python_stack};
    bpf_map_delete_elem(bpf_map__fd(launch_->maps.launch_stacks), &key);
  }
}

std::vector<InflightCall> CudaTracer::read_inflight_calls() const {
  std::vector<InflightCall> calls;
  const int fd = bpf_map__fd(calls_->maps.inflight);
  for_each_entry<nt_inflight_key, nt_inflight_call>(
      fd, [&](const nt_inflight_key &key, const nt_inflight_call &call) {
        calls.push_back({static_cast<std::uint32_t>(key.pid_tgid >> 32),
                         static_cast<std::uint32_t>(key.pid_tgid), call.proc_start_ns,
                         static_cast<nt_api>(key.api), call.enter_ns, call.stack_id, call.caller,
                         call.python_stack});
      });
  return calls;
}

void CudaTracer::delete_launch_counts(const std::vector<LaunchCount> &entries) {
  for (const auto &e : entries) {
    const nt_launch_key key{e.tgid, static_cast<std::uint32_t>(e.api), e.proc_start_ns, e.handle,
                            e.context};
    bpf_map_delete_elem(bpf_map__fd(launch_->maps.launches), &key);
  }
}

void CudaTracer::forget_kernel_functions(
    const std::function<bool(std::uint32_t, std::uint64_t)> &gone) {
  const int fd = bpf_map__fd(calls_->maps.known_kernel_functions);
  std::vector<nt_kernel_function_key> stale;
  read_hash_map<nt_kernel_function_key, std::uint64_t>(
      fd, [&](const nt_kernel_function_key &key, std::uint64_t) {
        if (gone(key.tgid, key.proc_start_ns))
          stale.push_back(key);
      });
  for (const auto &key : stale)
    bpf_map_delete_elem(fd, &key);
}

void CudaTracer::forget_nccl_calls(const std::function<bool(std::uint32_t, std::uint64_t)> &gone) {
  const int fd = bpf_map__fd(calls_->maps.nccl_inflight);
  std::vector<nt_inflight_key> stale;
  read_hash_map<nt_inflight_key, nt_nccl_inflight>(
      fd, [&](const nt_inflight_key &key, const nt_nccl_inflight &call) {
        if (gone(static_cast<std::uint32_t>(key.pid_tgid >> 32), call.proc_start_ns))
          stale.push_back(key);
      });
  for (const auto &key : stale)
    bpf_map_delete_elem(fd, &key);
}

void CudaTracer::delete_inflight_calls(const std::vector<InflightCall> &calls) {
  const int fd = bpf_map__fd(calls_->maps.inflight);
  for (const auto &call : calls) {
    nt_inflight_key key{};
    key.pid_tgid = static_cast<std::uint64_t>(call.tgid) << 32 | call.tid;
    key.api = call.api;
    bpf_map_delete_elem(fd, &key);
  }
}

std::uint32_t CudaTracer::launch_map_max_entries() const {
  return bpf_map__max_entries(launch_->maps.launches);
}

std::uint32_t CudaTracer::inflight_map_max_entries() const {
  return bpf_map__max_entries(calls_->maps.inflight);
}

TracerStats CudaTracer::stats() const {
  const int cpus = libbpf_num_possible_cpus();
  TracerStats stats;
  if (cpus <= 0)
    return stats;
  std::vector<std::uint64_t> values(static_cast<std::size_t>(cpus));
  const auto sum = [&](bpf_map *map, std::uint32_t index) {
    std::uint64_t total = 0;
    if (bpf_map_lookup_elem(bpf_map__fd(map), &index, values.data()) == 0)
      for (const auto value : values)
        total += value;
    return total;
  };
  stats.ring_buffer_full = sum(calls_->maps.stats, NT_STAT_RINGBUF_FULL);
  stats.inflight_map_full = sum(calls_->maps.stats, NT_STAT_INFLIGHT_MAP_FULL);
  stats.return_without_entry = sum(calls_->maps.stats, NT_STAT_RETURN_WITHOUT_ENTRY);
  stats.launch_map_full = sum(launch_->maps.stats, NT_STAT_LAUNCH_MAP_FULL);
  stats.stacks_lost =
      sum(calls_->maps.stats, NT_STAT_STACK_LOST) + sum(launch_->maps.stats, NT_STAT_STACK_LOST);
  stats.launch_stacks_full = sum(launch_->maps.stats, NT_STAT_LAUNCH_STACKS_FULL);
  stats.sampled_blocks_full = sum(calls_->maps.stats, NT_STAT_SAMPLED_BLOCKS_FULL);
  return stats;
}

} // namespace neutracer
