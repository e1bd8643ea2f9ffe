#pragma once
// Per-process CUDA state built from probe events and in-kernel launch counts.
// Pure: no clocks, no I/O; the caller passes times and liveness.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/cuda_api_table.h"
#include "daemon/cuda_discovery.h"
#include "daemon/event_decoder.h"
#include "detectors/memory_change.h"

namespace neutracer {

inline constexpr const char *kUnresolvedKernel = "[unresolved]";
inline constexpr const char *kOtherKernels = "[other]";
inline constexpr const char *kGraphLaunch = "[cuda_graph]";

enum class CopyDirection { h2d, d2h, d2d, peer, default_ };
inline constexpr std::size_t kCopyDirections = 5;
std::string_view copy_direction_name(CopyDirection direction);
inline constexpr std::size_t kMemoryKinds = 4;

// Upper bounds of the sync wait histogram, seconds.
inline constexpr std::array<double, 14> kSyncWaitBuckets = {
    1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60};

struct LaunchCount {
  std::uint32_t tgid = 0;
  std::uint64_t proc_start_ns = 0;
  nt_api api = NT_API_NONE;
  std::uint64_t handle = 0;
  std::uint64_t count = 0; // total since the process started being counted
};

struct InflightCall {
  std::uint32_t tgid = 0;
  std::uint32_t tid = 0;
  std::uint64_t proc_start_ns = 0;
  nt_api api = NT_API_NONE;
  std::uint64_t enter_ns = 0;
};

struct KernelSeries {
  std::uint64_t launches = 0;
  std::set<std::string> full_names; // demangled; empty for the bracketed pseudo-kernels
};

struct MemoryCounters {
  std::uint64_t used_bytes = 0;
  std::uint64_t peak_bytes = 0;
  std::uint64_t allocations = 0;
  std::uint64_t frees = 0;
  std::uint64_t allocated_bytes = 0;
  std::uint64_t freed_bytes = 0;
};

struct SyncCounters {
  double wait_seconds = 0;
  std::uint64_t waits = 0;
  std::array<std::uint64_t, kSyncWaitBuckets.size()> buckets{};
  double in_progress_seconds = 0; // longest wait still running, 0 when none
};

struct Allocation {
  std::uint64_t size = 0;
  MemoryKind kind = MemoryKind::device;
};

struct ProcessState {
  std::string comm;
  std::string exe;
  std::string container;
  bool discovered = false;

  // Kernel naming, joined at read time: handle -> name; CUfunction -> CUkernel.
  struct KernelName {
    std::string short_name; // the label
    std::string full_name;  // demangled
  };
  std::unordered_map<std::uint64_t, KernelName> names;
  std::unordered_map<std::uint64_t, std::uint64_t> function_to_kernel;
  std::map<std::pair<nt_api, std::uint64_t>, std::uint64_t> launch_totals;
  // Label -> series, rebuilt from launch_totals; `promoted` keeps labels sticky so
  // counters never move between series (that would look like a counter reset).
  std::map<std::string, KernelSeries> kernels;
  std::set<std::string> promoted;

  std::map<std::uint64_t, Allocation> live;     // device pointers and host pinned pointers
  std::map<std::uint64_t, Allocation> live_vmm; // cuMemCreate handles
  std::array<MemoryCounters, kMemoryKinds> memory{};
  std::uint64_t unknown_frees = 0; // frees of memory allocated before we attached

  std::array<std::uint64_t, kCopyDirections> copy_bytes{};
  std::array<std::uint64_t, kCopyDirections> copies{};
  std::array<double, kCopyDirections> copy_throughput{}; // smoothed bytes/s
  std::array<std::uint64_t, kCopyDirections> copy_bytes_at_last_tick{};

  std::map<nt_api, SyncCounters> syncs;
  std::map<std::pair<nt_api, std::uint32_t>, std::uint64_t> errors; // (api, CUresult) -> count

  // Longest CUDA call of any kind still running at the last inflight read.
  double longest_call_seconds = 0;
  nt_api longest_call_api = NT_API_NONE;

  // GPU memory changes since the detectors last took them; bounded.
  std::vector<MemoryChange> memory_changes;
  std::uint64_t memory_changes_dropped = 0;
  std::uint64_t failed_allocations = 0;

  std::uint64_t gpu_bytes_in_use() const; // device, managed and vmm; not host pinned
  std::uint64_t launches_total() const;   // over every kernel and launch API
};

// What a process left behind when it exited: information, never an alert.
struct ExitedProcess {
  ProcessId id;
  std::string comm;
  std::uint64_t gpu_bytes_in_use = 0;
};

// Memory changes kept per process between two scans.
inline constexpr std::size_t kMaxMemoryChangesPerScan = 1u << 16;

class CudaState {
public:
  struct Settings {
    std::uint32_t max_kernels_per_process = 50;
    double throughput_window_seconds = 10;
    long ticks_per_second = 100; // sysconf(_SC_CLK_TCK)
  };

  explicit CudaState(Settings settings);

  void apply(const Event &event);
  void apply(const nt_call_event &event);
  void apply(const NameEvent &event);

  // Replaces launch totals with a full read of the in-kernel counter map.
  void set_launch_counts(const std::vector<LaunchCount> &counts);

  // Records sync waits still in progress at `now_ns` (CLOCK_MONOTONIC).
  void set_inflight_calls(const std::vector<InflightCall> &calls, std::uint64_t now_ns);

  // Smooths throughput over the time since the last tick.
  void tick(double seconds_since_last_tick);

  // Takes names and containers from discovery and forgets processes that are gone.
  // `is_alive` answers for processes that have state but were not in this scan.
  // Returns the processes forgotten, so their in-kernel entries can be deleted.
  std::vector<ProcessId> update_processes(const DiscoveryResult &discovery,
                                          const std::function<bool(const ProcessId &)> &is_alive);

  // Processes forgotten by update_processes since the last call.
  std::vector<ExitedProcess> take_exited();

  // Each process's memory changes since the last call, emptied.
  std::map<ProcessId, std::vector<MemoryChange>> take_memory_changes();

  const std::map<ProcessId, ProcessState> &processes() const { return processes_; }
  ProcessId process_id(std::uint32_t tgid, std::uint64_t proc_start_ns) const;

  std::uint64_t malformed_events = 0;

private:
  ProcessState &process(std::uint32_t tgid, std::uint64_t proc_start_ns);
  void apply_allocation(ProcessState &process, const nt_call_event &event, MemoryKind kind);
  void apply_free(ProcessState &process, const nt_call_event &event);
  void apply_copy(ProcessState &process, const nt_call_event &event);
  void rebuild_kernels(ProcessState &process) const;
  void record_change(ProcessState &process, const nt_call_event &event, MemoryChangeKind kind,
                     std::uint64_t address, std::uint64_t bytes);

  Settings settings_;
  std::map<ProcessId, ProcessState> processes_;
  std::vector<ExitedProcess> exited_;
};

} // namespace neutracer
