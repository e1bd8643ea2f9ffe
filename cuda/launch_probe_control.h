// SPDX-License-Identifier: Apache-2.0
#pragma once
// What adaptive launch counting needs from the BPF side: launch probes attached to one process,
// and a gate that opens and closes its counting. CudaTracer implements it; tests use a fake.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/cuda_discovery.h"
#include "cuda/cuda_state.h"

namespace neutracer {

// What the launch program saw in a process's last counting window: its counted launches and
// when (bpf_ktime_get_ns, CLOCK_MONOTONIC) the first and the last of them ran.
struct LaunchGateHits {
  std::uint64_t launches = 0;
  std::uint64_t first_ns = 0;
  std::uint64_t last_ns = 0;
  bool operator==(const LaunchGateHits &) const = default;
};

class LaunchProbeControl {
public:
  virtual ~LaunchProbeControl() = default;
  // Attaches the launch probes of `libraries` for `pid` alone, with the probes of the calls that
  // name its launches (cuKernelGetFunction) when `with_name_calls`; returns how many were
  // attached (0 with first_error set when none could be).
  virtual std::size_t attach_launch_probes(int pid, const std::vector<LibraryId> &libraries,
                                           bool with_name_calls, std::string &first_error) = 0;
  // Removes them (in the background); no-op when none are attached.
  virtual void detach_launch_probes(int pid) = 0;
  // Opening starts a new window's hits from zero; closing keeps them for launch_gate_hits.
  virtual void set_launch_gate(std::uint32_t tgid, bool open) = 0;
  virtual LaunchGateHits launch_gate_hits(std::uint32_t tgid) const = 0;
  virtual void forget_launch_gate(std::uint32_t tgid) = 0;
  // Drops the unfinished-call entries of the sampled call probes of `tgid` (their return probe
  // may have been removed mid-call); called before a window opens.
  virtual void drop_sampled_calls(std::uint32_t tgid) = 0;
  // A full read of the in-kernel launch counters.
  virtual std::vector<LaunchCount> read_launch_counts() const = 0;
};

} // namespace neutracer
