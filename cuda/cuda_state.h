// SPDX-License-Identifier: Apache-2.0
#pragma once
// Per-process CUDA state built from probe events and in-kernel launch counts.
// Pure: no clocks, no I/O; the caller passes times and liveness.
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/flat_map.h"
#include "cuda/cuda_api_table.h"
#include "cuda/cuda_discovery.h"
#include "cuda/event_decoder.h"
#include "cuda/kernel_name_store.h"
#include "cuda/memory_change.h"

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
  std::uint64_t count = 0;   // total since the process started being counted
  std::uint64_t context = 0; // the launching thread's CUcontext, 0 when unknown
};

struct InflightCall {
  std::uint32_t tgid = 0;
  std::uint32_t tid = 0;
  std::uint64_t proc_start_ns = 0;
  nt_api api = NT_API_NONE;
  std::uint64_t enter_ns = 0;
  std::int32_t stack_id = NT_NO_STACK; // sync calls: the waiting thread's stack at entry
  std::uint64_t caller = 0;            // with stack_id: the return address at entry
  std::uint64_t python_stack = 0;      // sync calls: the key of its Python stack; 0: none
};

// A CUdevice ordinal as the process sees it; this when the device of a call is unknown.
inline constexpr int kUnknownDevice = -1;
inline constexpr const char *kUnknownGpu = "unknown";

struct KernelSeries {
  std::uint64_t launches = 0;
  FlatMap<int, std::uint64_t> launches_by_device; // CUdevice ordinal -> launches
  bool operator==(const KernelSeries &) const = default;
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
  int device = kUnknownDevice;
};

// What one GPU of a process holds and moved.
struct DeviceCounters {
  std::array<MemoryCounters, kMemoryKinds> memory{};
  std::uint64_t gpu_bytes_in_use() const; // device, managed and vmm; not host pinned
  std::array<std::uint64_t, kCopyDirections> copy_bytes{};
  std::array<std::uint64_t, kCopyDirections> copies{};
};

struct ProcessState {
  std::string comm;
  std::string exe;
  ContainerInfo container;
  bool discovered = false;

  // Kernel naming, joined at read time: handle -> name; CUfunction -> CUkernel. Bounded;
  // once a name was dropped, unnamed launches count as [other] (they may be a dropped name).
  KernelNameStore kernel_names;
  struct LaunchKey {
    nt_api api = NT_API_NONE;
    std::uint64_t handle = 0;
    std::uint64_t context = 0;
    auto operator<=>(const LaunchKey &) const = default;
  };
  FlatMap<LaunchKey, std::uint64_t> launch_totals;
  // The totals are scaled from sampled windows, not counted: exported apart from exact counts
  // so that a sum over processes never mixes the two silently.
  bool launches_estimated = false;
  // Label -> series, rebuilt from launch_totals; `promoted` keeps labels sticky so
  // counters never move between series (that would look like a counter reset). Flat: at
  // 1 000 processes x 50 kernels, std::map and std::set nodes took ~16 MiB.
  FlatMap<std::string, KernelSeries> kernels;
  FlatSet<std::string> promoted;
  // The full demangled names behind each label of `kernels`, grouped as they are (empty for
  // the bracketed pseudo-kernels), for /api/v1/kernels. Derived when asked, not kept per
  // series: that was a copy of every name, ~3.4 MiB at 1 000 processes x 50 kernels.
  FlatMap<std::string, FlatSet<std::string>> full_names() const;
  // A launch key's label before promotion ([cuda_graph], the kernel's short name, or for an
  // unnamed handle [unresolved], [other] once names were dropped), and its name if any.
  std::pair<std::string_view, const KernelName *> launch_label(const LaunchKey &key) const;
  // The label of the series a label's launches count in: itself while promoted or bracketed,
  // else [other].
  std::string_view series_label(std::string_view label) const;
  // Something `kernels` is built from changed since it was built (names, links, devices):
  // an idle process's series are not rebuilt every scan.
  bool kernels_stale = true;

  std::map<std::uint64_t, Allocation> live;     // device pointers and host pinned pointers
  std::map<std::uint64_t, Allocation> live_vmm; // cuMemCreate handles
  std::array<MemoryCounters, kMemoryKinds> memory{};
  std::uint64_t unknown_frees = 0; // frees of memory allocated before we attached

  std::array<std::uint64_t, kCopyDirections> copy_bytes{};
  std::array<std::uint64_t, kCopyDirections> copies{};
  std::array<double, kCopyDirections> copy_throughput{}; // smoothed bytes/s
  std::array<std::uint64_t, kCopyDirections> copy_bytes_at_last_tick{};

  // Which GPU: context -> CUdevice ordinal, from primary-context retains and creations.
  std::unordered_map<std::uint64_t, int> context_devices;
  // Host GPU label of each CUdevice ordinal (CUDA_VISIBLE_DEVICES applied); empty when not
  // known, and then the ordinal is the label.
  std::vector<std::string> visible_gpus;
  bool visible_gpus_read = false;
  // Per-GPU breakdown of `memory`, `copy_bytes` and `copies` (kUnknownDevice included).
  std::map<int, DeviceCounters> devices;

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

  // The ordinal of the device a call made with `context` current ran on. A context we never
  // saw bound (set before we attached) falls back to the only device the process uses or can
  // see, else kUnknownDevice.
  int device_of(std::uint64_t context) const;
  // The `gpu` label of an ordinal: the host's GPU index where known, "unknown" for none.
  std::string gpu_label(int device) const;
};

// What a process left behind when it exited: information, never an alert.
struct ExitedProcess {
  ProcessId id;
  std::string comm;
  std::uint64_t gpu_bytes_in_use = 0;
  // The process lives on with a new program (exec): its CUDA state went with the old image.
  bool replaced = false;
};

// Kernel names kept: per process at least this many (and never fewer than
// max_kernels_per_process), and this many bytes (text and entries) over all processes.
inline constexpr std::size_t kDefaultKernelNamesPerProcess = 1024;
inline constexpr std::size_t kDefaultKernelNameBytes = std::size_t{8} << 20;

// Memory changes kept per process between two scans.
inline constexpr std::size_t kMaxMemoryChangesPerScan = 1u << 16;

class CudaState {
public:
  struct Settings {
    std::uint32_t max_kernels_per_process = 50;
    double throughput_window_seconds = 10;
    long ticks_per_second = 100; // sysconf(_SC_CLK_TCK)
    // Reads a new process's visible GPUs (see ProcessState::visible_gpus) when its first event
    // arrives, before any of its calls is charged to a device; nullopt: not readable now.
    std::function<std::optional<std::vector<std::string>>(const ProcessId &)> read_visible_gpus;
    std::size_t max_kernel_names_per_process = kDefaultKernelNamesPerProcess;
    std::size_t max_kernel_name_bytes = kDefaultKernelNameBytes;
  };

  explicit CudaState(Settings settings);

  void apply(const Event &event);
  void apply(const nt_call_event &event);
  void apply(const NameEvent &event);
  // Tensor blocks belong to the allocator view and NCCL calls to the NCCL collector
  // (cuda/event_sinks.h), not to this state.
  void apply(const nt_block_event &) {}
  void apply(const nt_nccl_event &) {}

  // Replaces launch totals with a full read of the in-kernel counter map.
  void set_launch_counts(const std::vector<LaunchCount> &counts);
  // Marks the processes (by PID) whose launch totals are estimates; the others are exact.
  void set_estimated_launches(const std::set<int> &pids);

  // Records sync waits still in progress at `now_ns` (CLOCK_MONOTONIC).
  void set_inflight_calls(const std::vector<InflightCall> &calls, std::uint64_t now_ns);

  // Smooths throughput over the time since the last tick.
  void tick(double seconds_since_last_tick);

  // Takes names and containers from discovery and forgets processes that are gone.
  // `is_alive` answers for processes that have state but were not in this scan.
  // Returns the processes forgotten, so their in-kernel entries can be deleted.
  std::vector<ProcessId> update_processes(const DiscoveryResult &discovery,
                                          const std::function<bool(const ProcessId &)> &is_alive);

  // Processes whose visible GPUs were not set yet, and setting them (once per process: a
  // process's environment is fixed at exec).
  std::vector<ProcessId> processes_without_visible_gpus() const;
  void set_visible_gpus(const ProcessId &id, std::vector<std::string> labels);

  // Forgets processes whose image is gone: an exec replaced it (same PID and start time; the
  // new image starts from nothing), or the process exited before a scan saw it go.
  // `replaced`: the processes live on with a new program (exec); otherwise they exited.
  void forget_images(const std::vector<ProcessId> &ids, bool replaced = false);

  // Processes forgotten by update_processes or forget_images since the last call.
  std::vector<ExitedProcess> take_exited();

  // Each process's memory changes since the last call, emptied.
  std::map<ProcessId, std::vector<MemoryChange>> take_memory_changes();

  const std::map<ProcessId, ProcessState> &processes() const { return processes_; }
  // Whether a process with this PID launched a kernel handle it has no name for (and names
  // may still be learned: none dropped). Graph launches have no kernel name to learn.
  bool has_unnamed_launches(int pid) const;
  // Whether a process with this PID has launched anything counted.
  bool has_launches(int pid) const;
  ProcessId process_id(std::uint32_t tgid, std::uint64_t proc_start_ns) const;

  std::uint64_t malformed_events = 0;

  // Kernel names and links not kept, over every process seen (exited ones included).
  std::uint64_t kernel_names_dropped() const;
  // Bytes kept names and links take now (text and entries), and the most they may take.
  std::size_t kernel_name_bytes() const { return name_budget_.used_bytes(); }
  std::size_t kernel_name_max_bytes() const { return name_budget_.max_bytes(); }
  // Changes whenever what /api/v1/kernels shows may have changed (processes, their names and
  // labels, kernel series): the document is rebuilt only then.
  std::uint64_t kernels_version() const { return kernels_version_; }

private:
  ProcessState &process(std::uint32_t tgid, std::uint64_t proc_start_ns);
  void apply_allocation(ProcessState &process, const nt_call_event &event, MemoryKind kind);
  void apply_free(ProcessState &process, const nt_call_event &event);
  void apply_copy(ProcessState &process, const nt_call_event &event);
  void rebuild_kernels(ProcessState &process);
  std::size_t max_kernel_names() const;
  // Erases a process, giving its kernel names back to the budget.
  std::map<ProcessId, ProcessState>::iterator
  forget(std::map<ProcessId, ProcessState>::iterator it);
  void record_change(ProcessState &process, const nt_call_event &event, MemoryChangeKind kind,
                     std::uint64_t address, std::uint64_t bytes);

  Settings settings_;
  std::map<ProcessId, ProcessState> processes_;
  std::vector<ExitedProcess> exited_;
  KernelNameBudget name_budget_;
  std::uint64_t exited_names_dropped_ = 0;
  std::uint64_t kernels_version_ = 0;
};

} // namespace neutracer
