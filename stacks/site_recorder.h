// SPDX-License-Identifier: Apache-2.0
#pragma once
// Turns the stack ids of probe events, waits in progress and sampled launches into call sites
// per process (call_sites.h), symbolising each new stack while its process still runs, and
// deletes from the kernel's stack map the ids nothing refers to any more.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "bpf/neutracer_abi.h"
#include "common/procfs.h"
#include "cuda/cuda_state.h"
#include "cuda/stack_map.h"
#include "stacks/call_sites.h"
#include "stacks/python_call_frames.h"
#include "stacks/symbolizer.h"

namespace neutracer {

struct SiteRecorderSettings {
  CallSitesSettings sites;
  SymbolizerSettings symbols;
  // Every this many scans, stack ids nothing referred to for `keep_unused_scans` scans are
  // deleted from the kernel's map (its buckets fill otherwise, and new stacks are lost).
  std::uint64_t collect_every_scans = 16;
  std::uint64_t keep_unused_scans = 32;
  // A wait in progress at least this long shows its thread's Python frames.
  double python_wait_seconds = 0.5;
  // 1e9 / sysconf(_SC_CLK_TCK): the kernel side tells a process from a later one of its PID
  // by its start time, in clock ticks.
  std::uint64_t ns_per_tick = 10'000'000;
};

// What an alert names: the site of a failed allocation (OOM, fragmentation) or of a wait in
// progress (hang); a leak names several (leak_sites).
enum class SitePurpose { failure, wait };

// A copy of one process's sites for the HTTP threads.
struct ProcessSitesView {
  std::vector<Site> sites;
  std::uint64_t untracked_allocations = 0;
};

class SiteRecorder {
public:
  using ProcessOf = std::function<ProcessId(std::uint32_t tgid, std::uint64_t proc_start_ns)>;

  SiteRecorder(StackMap &map, const ProcFs &procfs, SiteRecorderSettings settings = {});

  // Whether the probes take stacks at all (stacks.enabled).
  bool enabled() const { return map_.stack_depth() > 0; }

  // The traced processes, at each scan: those that run a CPython this can read get their
  // interpreter's offsets written for the kernel side, so their allocations carry Python stacks.
  void update_python_processes(const std::vector<ProcessId> &processes);
  // A completed call of process `id`: allocations, failed allocations, frees, syncs.
  void record(const ProcessId &id, const nt_call_event &event);
  // Calls in progress, read at each scan: syncs with a stack are pending waits at their site;
  // the thread of each site's longest wait, once it waited python_wait_seconds, gets its
  // Python frames: those the probe took at the call's entry, else read from its memory.
  void set_inflight(const std::vector<InflightCall> &calls, std::uint64_t now_ns,
                    const ProcessOf &process_of);
  // A tensor block the allocator view sampled, with the stack taken inside PyTorch's allocator:
  // the index of its site (made now, while the process runs); -1 when stacks are off. Blocks
  // make new sites only in the first half of the process's site budget: a view on a busy
  // training step must not leave its launches and driver allocations without sites.
  std::int32_t block_site(const ProcessId &id, std::int32_t stack_id, std::uint64_t python_key);
  // A call whose stack the probe took at its entry, with `caller` (the return address there),
  // such as an NCCL collective: the index of its site, made now; -1 when stacks are off.
  std::int32_t entry_site(const ProcessId &id, std::int32_t stack_id, std::uint64_t caller,
                          std::uint64_t python_key);
  // The sampled launch stacks, read at each scan.
  void set_launch_stacks(const std::vector<LaunchStackCount> &counts, const ProcessOf &process_of);
  // The live allocations the leak detector holds as samples.
  void set_leak_samples(const ProcessId &id, std::span<const std::uint64_t> addresses);
  // After each scan: deletes unused stack ids now and then.
  void end_scan();
  void forget(const ProcessId &id);

  // The index of the site an allocation with this stack id and Python stack key was recorded at
  // (within the last scans: ids are read once and kept while used); -1 when unknown.
  std::int32_t allocation_site(const ProcessId &id, std::int32_t stack_id,
                               std::uint64_t python_key) const;
  // Site `index` of process `id` (as block_site or entry_site returned it); nullptr when unknown.
  const Site *site(const ProcessId &id, std::int32_t index) const;
  // The site an alert about `id` names; nullptr when there is none.
  const Site *site_for(const ProcessId &id, SitePurpose purpose, std::uint64_t time_ns) const;
  // The `count` sites most likely leaking in `id`, most likely first.
  std::vector<const Site *> leak_sites(const ProcessId &id, std::size_t count) const;
  // Copies of every process's sites; a process's copy is made again only when it changed.
  std::map<ProcessId, std::shared_ptr<const ProcessSitesView>> views();

  const CallSites &sites() const { return sites_; }
  std::size_t cached_stacks() const { return stacks_.size(); }
  // Python stacks read back that did not match their key (and were deleted).
  std::uint64_t python_stacks_rejected() const { return python_stacks_rejected_; }
  std::uint64_t stacks_deleted() const { return stacks_deleted_; }
  // Stack ids the kernel map held at the last collection.
  std::size_t stack_map_ids() const { return stack_map_ids_; }
  const Symbolizer &symbolizer() const { return symbolizer_; }

private:
  struct CachedStack {
    std::vector<std::uint64_t> frames;
    std::uint64_t used_scan = 0;
  };
  // The frames of a stack id (read from the map once); nullptr when the map lacks it.
  const std::vector<std::uint64_t> *frames_of(std::int32_t id);
  SiteIndex site_of(const ProcessId &id, ProcessSites &sites, std::int32_t stack_id,
                    StackCapture capture, std::uint64_t caller, std::uint64_t python_key = 0,
                    double budget_share = 1.0);
  // The native frames of a new site, with the Python frames of `python_key` when it has them.
  SymbolizedStack symbolize(const ProcessId &id, const CallSiteStack &stack);
  // A site whose Python frames were lost tries again, at most once per scan, when it is hit.
  void retry_python(const ProcessId &id, ProcessSites &sites, SiteIndex index,
                    const CallSiteStack &stack);

  StackMap &map_;
  SiteRecorderSettings settings_;
  Symbolizer symbolizer_;
  PythonCallFrames python_;
  std::set<ProcessId> python_written_; // processes whose offsets the kernel side has
  std::set<std::pair<ProcessId, SiteIndex>> python_retried_; // this scan
  CallSites sites_;
  std::unordered_map<std::int32_t, CachedStack> stacks_;
  // (stack id, caller, Python stack) of each sampled launch stack -> its site, per process.
  std::map<ProcessId, std::map<std::tuple<std::int32_t, std::uint64_t, std::uint64_t>, SiteIndex>>
      launch_sites_;
  // Ids the kernel's maps refer to, at the last scan: waits in progress, launch samples.
  std::set<std::int32_t> inflight_ids_, launch_ids_;
  std::map<ProcessId, std::pair<std::uint64_t, std::shared_ptr<const ProcessSitesView>>> views_;
  std::uint64_t scan_ = 0;
  std::uint64_t stacks_deleted_ = 0;
  std::uint64_t python_stacks_rejected_ = 0;
  std::size_t stack_map_ids_ = 0;
};

} // namespace neutracer
