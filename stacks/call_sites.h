// SPDX-License-Identifier: Apache-2.0
#pragma once
// Call sites per process: each distinct stack that allocated, failed to allocate, waited or
// launched, with what it did. Bounded: sites per process and over all processes (beyond them a
// process's calls count in its `over_limit` site), live allocations tracked per process. Pure.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/process_id.h"
#include "stacks/call_site_stack.h"
#include "stacks/frame.h"

namespace neutracer {

struct SiteCounts {
  std::uint64_t allocations = 0; // successful GPU allocations made here
  std::uint64_t allocated_bytes = 0;
  std::uint64_t live_allocations = 0; // of those, not freed yet
  std::uint64_t live_bytes = 0;
  std::uint64_t failed_allocations = 0; // failed GPU allocations (out of memory, mostly)
  std::uint64_t failed_bytes = 0;       // requested by them
  std::uint64_t leak_samples = 0;   // live allocations the leak detector sampled (high-water marks)
  std::uint64_t launch_samples = 0; // kernel launches sampled here
  std::uint64_t waits = 0;          // synchronisations that returned
  double wait_seconds = 0;
  std::uint64_t pending_waits = 0; // synchronisations still waiting at the last scan
  double longest_pending_seconds = 0;
  bool operator==(const SiteCounts &) const = default;
};

enum class SiteKind : std::uint8_t {
  stack,      // a stack
  no_stack,   // calls whose stack the kernel did not store (its id taken by another stack)
  over_limit, // calls whose new stack found the site limits reached
};
std::string_view site_kind_name(SiteKind kind);

struct Site {
  SiteKind kind = SiteKind::stack;
  std::shared_ptr<const SymbolizedStack> stack; // null for the other kinds
  SiteCounts counts;
  // The Python frames of the thread in this site's longest wait in progress, innermost first,
  // read while it waited; empty when none are known.
  std::vector<Frame> waiting_python;
};

struct CallSitesSettings {
  std::size_t max_sites_per_process = 256;
  std::size_t max_sites = 16384; // over all processes
  std::size_t max_live_allocations_per_process = std::size_t{1} << 20;
  std::size_t recent_failures = 64; // per process, to find the site of a failure by its time
};

using SiteIndex = std::uint32_t;

class ProcessSites {
public:
  // The site of `stack`; a new one (named by `symbolize`) only while `may_add`, else the
  // over_limit site.
  SiteIndex site(const CallSiteStack &stack, bool may_add,
                 const std::function<SymbolizedStack()> &symbolize);
  SiteIndex pseudo_site(SiteKind kind);
  // Names a stack site anew (its Python frames found after all).
  void restack(SiteIndex index, SymbolizedStack stack);
  // The site of `stack` if it has one already.
  std::optional<SiteIndex> find_site(const CallSiteStack &stack) const;

  // GPU memory: `vmm` for cuMemCreate handles, which live apart from device pointers.
  void allocation(SiteIndex site, std::uint64_t address, std::uint64_t bytes, bool vmm);
  void free(std::uint64_t address, bool vmm);
  void failed_allocation(SiteIndex site, std::uint64_t bytes, std::uint64_t time_ns);
  void wait(SiteIndex site, double seconds);
  // Replace the counts read at each scan.
  void set_launch_samples(const std::map<SiteIndex, std::uint64_t> &samples);
  void set_pending_waits(const std::map<SiteIndex, std::pair<std::uint64_t, double>> &waits);
  // The Python frames of the waiting threads, by site; every other site's are cleared.
  void set_waiting_python(std::map<SiteIndex, std::vector<Frame>> frames);
  // The addresses of the live allocations the leak detector holds as samples.
  void set_leak_samples(std::span<const std::uint64_t> addresses);

  const std::vector<Site> &sites() const { return sites_; }
  std::size_t stack_sites() const { return index_.size(); }
  // Changes whenever a site or its counts change.
  std::uint64_t version() const { return version_; }
  // Allocations not tracked for lack of room (their frees are not matched either).
  std::uint64_t untracked_allocations() const { return untracked_; }

  // The site of the last failed allocation at or before `time_ns` (else the last one).
  std::optional<SiteIndex> failure_site(std::uint64_t time_ns) const;
  // The `count` sites most likely leaking, most likely first: most leak samples, then most live
  // bytes (stack sites before the others).
  std::vector<SiteIndex> leak_sites(std::size_t count) const;
  // The site of the longest wait in progress.
  std::optional<SiteIndex> wait_site() const;

  explicit ProcessSites(const CallSitesSettings &settings) : settings_(settings) {}

private:
  struct Live {
    SiteIndex site = 0;
    std::uint64_t bytes = 0;
  };
  struct AddressesHash {
    std::size_t operator()(const std::vector<std::uint64_t> &addresses) const;
  };
  static std::vector<std::uint64_t> index_key(const CallSiteStack &stack);
  void add_live(std::unordered_map<std::uint64_t, Live> &live, SiteIndex site,
                std::uint64_t address, std::uint64_t bytes);
  void drop_live(std::unordered_map<std::uint64_t, Live> &live, std::uint64_t address);
  // Among stack sites (other kinds only when no stack site qualifies), the best by `better`.
  template <typename Better> std::optional<SiteIndex> best_site(Better better) const;

  CallSitesSettings settings_;
  std::vector<Site> sites_;
  std::unordered_map<std::vector<std::uint64_t>, SiteIndex, AddressesHash> index_;
  std::map<SiteKind, SiteIndex> pseudo_;
  std::unordered_map<std::uint64_t, Live> live_, live_vmm_;
  std::uint64_t untracked_ = 0;
  std::vector<std::pair<std::uint64_t, SiteIndex>> failures_; // (time, site), oldest first
  std::uint64_t version_ = 0;
};

// Every process's sites, under one limit of sites in total.
class CallSites {
public:
  explicit CallSites(CallSitesSettings settings = {}) : settings_(settings) {}

  // The process's sites, created empty.
  ProcessSites &process(const ProcessId &id);
  const ProcessSites *find(const ProcessId &id) const;
  ProcessSites *find(const ProcessId &id);
  // Whether `sites` may take one more stack site; `share` < 1 keeps the rest of the process's
  // budget for other callers.
  bool may_add(const ProcessSites &sites, double share = 1.0) const;
  void forget(const ProcessId &id);
  const std::map<ProcessId, ProcessSites> &processes() const { return processes_; }
  std::map<ProcessId, ProcessSites> &processes() { return processes_; }
  std::size_t total_stack_sites() const;
  const CallSitesSettings &settings() const { return settings_; }

private:
  CallSitesSettings settings_;
  std::map<ProcessId, ProcessSites> processes_;
};

} // namespace neutracer
