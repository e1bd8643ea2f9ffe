// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the main loop needs from the BPF side of CUDA tracing. CudaTracer is the real one; unit
// tests drive the loop through a fake.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cuda/cuda_discovery.h"
#include "cuda/cuda_state.h"
#include "cuda/entry_instruction.h"
#include "cuda/launch_probe_control.h"
#include "cuda/stack_map.h"

namespace neutracer {

struct AttachSummary {
  std::size_t probes = 0;          // links created
  std::size_t missing_symbols = 0; // symbols this driver does not export
  std::size_t errors = 0;          // attach calls that failed
  std::string first_error;
  bool retry = false; // the file vanished mid-attach: nothing kept, try again next scan
  // The daemon ran out of file descriptors (EMFILE/ENFILE): nothing kept, retry is set too.
  bool out_of_descriptors = false;
  // The first instruction of each hot entry probed (launches, cuKernelGetFunction): one the
  // kernel single-steps rather than emulates costs each call several microseconds more.
  struct HotEntry {
    std::string symbol;
    EntryInstruction instruction;
  };
  std::vector<HotEntry> hot_entries;
};

struct TracerStats {
  std::uint64_t ring_buffer_full = 0;
  std::uint64_t launch_map_full = 0;
  std::uint64_t inflight_map_full = 0;
  std::uint64_t return_without_entry = 0;
  std::uint64_t stacks_lost = 0;         // stacks not stored (id bucket taken, no walk)
  std::uint64_t launch_stacks_full = 0;  // sampled launch stacks not counted: map full
  std::uint64_t sampled_blocks_full = 0; // allocator view: sampled tensor blocks not kept
};

class CudaTracing : public LaunchProbeControl, public StackMap {
public:
  // Attaches every probe to one library file, system-wide. Never throws.
  virtual AttachSummary attach(const CudaLibrary &library) = 0;
  virtual void detach(const LibraryId &id) = 0;
  virtual bool is_attached(const LibraryId &id) const = 0;
  virtual std::vector<LibraryId> attached() const = 0;
  virtual std::size_t probe_count() const = 0;
  // Whether launch probes are attached per process (adaptive counting) or system-wide.
  virtual bool per_process_launch_probes() const = 0;
  // With launch probes system-wide: whether the call that names launched functions
  // (cuKernelGetFunction) is probed per process through LaunchProbeControl (NameProbeKeeper)
  // rather than system-wide with the other calls.
  virtual bool per_process_name_probes() const { return false; }
  // What one probed launch costs the launching thread here, in ns (per_process_launch_probes
  // only; trap_calibration.h); nullopt when it cannot be measured.
  virtual std::optional<double> measure_launch_trap_ns() = 0;
  // Waits up to `timeout` for events and passes each one's bytes to `sink`.
  virtual void poll(std::chrono::milliseconds timeout,
                    const std::function<void(std::span<const std::byte>)> &sink) = 0;
  // PyTorch's caching allocator (docs/allocator-view.md): attaches the probes of the static
  // tracepoints in the library at `library_path` (pytorch:malloc, pytorch:free) to process `pid`
  // alone. Empty on success; else why not, with nothing attached.
  virtual std::string attach_allocator_probes(int pid, const std::string &library_path) = 0;
  // Detaches them and forgets the process's sampled blocks.
  virtual void detach_allocator_probes(int pid) = 0;
  virtual std::vector<InflightCall> read_inflight_calls() const = 0;
  virtual void delete_launch_counts(const std::vector<LaunchCount> &entries) = 0;
  virtual void delete_inflight_calls(const std::vector<InflightCall> &calls) = 0;
  // Forgets which cuKernelGetFunction results the processes for which `gone` (tgid, start) is
  // true have sent: a process that execs keeps its PID and start, and may be handed the same
  // handles again, whose names its new image must learn.
  virtual void
  forget_kernel_functions(const std::function<bool(std::uint32_t, std::uint64_t)> &gone) = 0;
  // Forgets the NCCL calls in flight of the processes for which `gone` (tgid, start) is true:
  // a thread that died inside a call (a rank killed while it waited) left its entry.
  virtual void forget_nccl_calls(const std::function<bool(std::uint32_t, std::uint64_t)> &) {}
  virtual TracerStats stats() const = 0;
  // Attaches put off since start because fewer than kReservedDescriptors were free
  // (common/descriptor_reserve.h): retried later, never counted as attach errors.
  virtual std::uint64_t attaches_put_off() const { return 0; }
  virtual std::uint32_t launch_map_max_entries() const = 0;
  virtual std::uint32_t inflight_map_max_entries() const = 0;
};

} // namespace neutracer
