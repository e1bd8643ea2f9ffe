// SPDX-License-Identifier: Apache-2.0
#pragma once
// The kernel-facing side of CUDA tracing: loads the BPF programs, attaches them to
// libcuda files, and reads their maps and ring buffer. Thin: all meaning lives in CudaState.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/bpf_errors.h"
#include "common/bpf_link.h"
#include "common/unique_fd.h"
#include "cuda/allocator_probes.h"
#include "cuda/cuda_discovery.h"
#include "cuda/cuda_state.h"
#include "cuda/cuda_tracing.h"

struct bpf_program;
struct cuda_launch;
struct cuda_calls;
struct ring_buffer;

namespace neutracer {

struct TracerSettings {
  std::uint32_t launch_map_entries = 65536;
  std::uint32_t ring_buffer_bytes = 4u << 20;
  // false: launch probes attach system-wide with the other probes (exact counting). true: they
  // attach per process through LaunchProbeControl, and count only while the process's gate is
  // open (adaptive counting). Either way, where the kernel has uprobe_multi links, the probes
  // of cuKernelGetFunction, which PyTorch calls next to its launches (47 times per CNN step)
  // and whose answers repeat, attach per process.
  bool per_process_launch_probes = false;
  // Native call stacks (bpf/neutracer_abi.h): frames kept per stack, 0 for none (no capture);
  // more than the kernel's perf_event_max_stack is lowered to it.
  std::uint32_t stack_depth = 0;
  std::uint32_t stack_map_entries = 8192;
  // About 1 in this many launches records its stack; 0: no launch stacks.
  std::uint32_t launch_stack_every = 0;
  std::uint32_t launch_stack_entries = 16384;
  // PyTorch's allocator view: a tensor block of this many bytes or more is always sampled, a
  // smaller one with probability bytes / this.
  std::uint64_t allocator_sample_bytes = 1u << 20;
};

class CudaTracer : public CudaTracing {
public:
  explicit CudaTracer(const TracerSettings &settings); // throws TracerError
  ~CudaTracer();
  CudaTracer(const CudaTracer &) = delete;
  CudaTracer &operator=(const CudaTracer &) = delete;

  // Attaches every probe to one library file, system-wide (all present and future
  // processes mapping it). Never throws; failures are in the summary.
  AttachSummary attach(const CudaLibrary &library) override;
  void detach(const LibraryId &id) override;
  bool is_attached(const LibraryId &id) const override { return attachments_.contains(id); }
  std::vector<LibraryId> attached() const override;
  std::size_t probe_count() const override;
  // False when adaptive counting was asked for but the kernel lacks uprobe_multi links: the
  // launch probes then attach system-wide, as in exact mode.
  bool per_process_launch_probes() const override { return per_process_launch_probes_; }
  // Where the kernel has uprobe_multi links, exact counting probes cuKernelGetFunction per
  // process: attach_launch_probes then attaches those probes alone.
  bool per_process_name_probes() const override {
    return multi_links_ && !per_process_launch_probes_;
  }
  std::optional<double> measure_launch_trap_ns() override;

  // Waits up to `timeout` for events and passes each one's bytes to `sink`: those that woke the
  // wait and those the probes wrote without waking it (bpf/cuda_calls.bpf.c, event_wakeup).
  void poll(std::chrono::milliseconds timeout,
            const std::function<void(std::span<const std::byte>)> &sink) override;

  std::vector<LaunchCount> read_launch_counts() const override;

  // LaunchProbeControl (per_process_launch_probes only).
  // Both attach calls put off (nothing attached, retried later) while fewer than
  // kReservedDescriptors are free.
  std::size_t attach_launch_probes(int pid, const std::vector<LibraryId> &libraries,
                                   bool with_name_calls, std::string &first_error) override;
  std::uint64_t attaches_put_off() const override { return attaches_put_off_; }
  void detach_launch_probes(int pid) override;
  void set_launch_gate(std::uint32_t tgid, bool open) override;
  LaunchGateHits launch_gate_hits(std::uint32_t tgid) const override;
  void forget_launch_gate(std::uint32_t tgid) override;
  void drop_sampled_calls(std::uint32_t tgid) override;

  // StackMap.
  std::uint32_t stack_depth() const override { return stack_depth_; }
  std::optional<std::vector<std::uint64_t>> read_stack(std::int32_t id) const override;
  std::vector<std::int32_t> stack_ids() const override;
  std::optional<nt_python_stack> read_python_stack(std::uint64_t key) const override;
  void delete_python_stack(std::uint64_t key) override;
  bool set_python_process(std::uint32_t tgid, const nt_python_offsets &offsets) override;
  void forget_python_process(std::uint32_t tgid) override;
  void delete_stacks(const std::vector<std::int32_t> &ids) override;
  std::vector<LaunchStackCount> read_launch_stacks() const override;
  void delete_launch_stacks(const std::vector<LaunchStackCount> &entries) override;

  std::string attach_allocator_probes(int pid, const std::string &library_path) override;
  void detach_allocator_probes(int pid) override;

  std::vector<InflightCall> read_inflight_calls() const override;
  void delete_launch_counts(const std::vector<LaunchCount> &entries) override;
  void
  forget_kernel_functions(const std::function<bool(std::uint32_t, std::uint64_t)> &gone) override;
  void forget_nccl_calls(const std::function<bool(std::uint32_t, std::uint64_t)> &gone) override;
  void delete_inflight_calls(const std::vector<InflightCall> &calls) override;
  TracerStats stats() const override;
  // Capacities of the maps read above.
  std::uint32_t launch_map_max_entries() const override;
  std::uint32_t inflight_map_max_entries() const override;

private:
  using Link = BpfLink;
  void load(const TracerSettings &settings); // throws TracerError
  // Probes grouped as they attach: one uprobe_multi link per program and direction (entry or
  // return), on every offset of that program. A library's per-process probes keep the file
  // open, so it stays reachable after the process it was found through exits.
  struct LinkSites {
    std::vector<std::uint64_t> offsets;
    std::vector<std::uint64_t> cookies; // the nt_api of each offset
  };
  struct LaunchLibrary {
    UniqueFd file;
    std::map<std::pair<bpf_program *, bool>, LinkSites> links; // (program, retprobe)
  };
  struct LaunchDeleter {
    void operator()(cuda_launch *skeleton) const;
  };
  struct CallsDeleter {
    void operator()(cuda_calls *skeleton) const;
  };
  struct RingBufferDeleter {
    void operator()(ring_buffer *rb) const;
  };

  std::unique_ptr<cuda_launch, LaunchDeleter> launch_;
  std::unique_ptr<cuda_calls, CallsDeleter> calls_;
  std::unique_ptr<ring_buffer, RingBufferDeleter> ring_buffer_;
  const std::function<void(std::span<const std::byte>)> *sink_ = nullptr;
  // A library's system-wide probes. Where the kernel has uprobe_multi links (Linux 6.6), one
  // link per program and direction on every offset of that program: closing ~8 descriptors
  // detaches them all, where ~120 perf-event uprobes took 12 s to remove, one RCU wait after
  // another, at every stop and every detach. Older kernels get the perf-event uprobes.
  struct LibraryLinks {
    std::vector<Link> probes;    // perf-event uprobes, one per probe
    std::vector<UniqueFd> multi; // uprobe_multi links
    std::size_t probe_count = 0; // probed offsets, whichever kind holds them
  };
  void close_in_background(std::vector<UniqueFd> links);
  // The launch program on a function of the daemon itself, for this process only: a link that
  // traps like a launch (the function runs only when the caller calls it) and counts only while
  // the daemon's own gate is open.
  // Invalid, with errno set, when it cannot attach; nullopt when the function is not found.
  std::optional<UniqueFd> probe_own_function() const;
  // Whether the kernel links a program loaded for uprobe_multi (tried on a daemon function).
  bool uprobe_multi_links_work() const;

  std::map<LibraryId, LibraryLinks> attachments_;
  bool multi_links_ = false; // the kernel took uprobe_multi programs
  bool per_process_launch_probes_ = false;
  std::uint32_t stack_depth_ = 0;
  std::map<LibraryId, LaunchLibrary> launch_libraries_;
  std::map<int, std::vector<UniqueFd>> process_launch_links_; // uprobe_multi links
  std::uint64_t attaches_put_off_ = 0;
  std::unique_ptr<AllocatorProbes> allocator_probes_; // after calls_: its links go first
  // Declared last: destroyed first, so links being removed never outlive their programs.
  LinkReaper reaper_;
};

} // namespace neutracer
