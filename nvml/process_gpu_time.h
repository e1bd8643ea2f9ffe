// SPDX-License-Identifier: Apache-2.0
#pragma once
// Busy GPU time per traced process, integrated from NVML's per-process utilization samples
// (nvmlDeviceGetProcessUtilization). The driver samples the GPU in short periods and charges
// each to the processes busy in it. A query answers, for each process busy since the
// lastSeenTimeStamp it passed, its SM and memory-controller shares averaged over all of the
// driver's periods since then, idle ones included, stamped with the last period that charged
// it. So every process of one answer shares one period: from the lastSeenTimeStamp to the
// answer's newest stamp, which becomes the next query's lastSeenTimeStamp. Seen on an H100 with
// R580: two processes taking turns, busy 50 % and 25 % of each second, came back stamped .32 and
// .92 s into each second with 30 % and 41 %: shares of the whole second, each 0.2 s driver
// period charged whole to one process. A device's first query (lastSeenTimeStamp 0: the
// driver's whole buffer) counts for one scan interval; a period is capped at max_period. Pure.
#include <cstdint>
#include <map>
#include <span>
#include <utility>

#include "common/process_id.h"
#include "nvml/nvml_api.h"

namespace neutracer {

class ProcessGpuTime {
public:
  struct Settings {
    double first_period_seconds = 2; // the scan interval
    double max_period_seconds = 10;
  };
  struct Busy {
    double sm_seconds = 0;     // SMs busy with the process's kernels
    double memory_seconds = 0; // memory controller busy with its reads and writes
    bool operator==(const Busy &) const = default;
  };
  using Key = std::pair<ProcessId, unsigned>;        // the process, the GPU's NVML index
  using Traced = std::map<std::uint32_t, ProcessId>; // the traced processes by PID

  // NVML's stamps are wall-clock microseconds: one further ahead of the daemon's clock than
  // this is from another clock (the wall clock stepped back since it was taken).
  static constexpr std::uint64_t kFutureSlackUs = 5'000'000;

  explicit ProcessGpuTime(Settings settings) : settings_(settings) {}

  // The lastSeenTimeStamp for device `gpu`'s next query. After the wall clock stepped back
  // (the device's newest stamp is ahead of `now_us`), the device starts over from 0: NVML
  // would otherwise answer nothing until the clock caught up.
  std::uint64_t last_seen_us(unsigned gpu, std::uint64_t now_us);

  // Integrates one answer of device `gpu` to a query with last_seen_us(gpu). Samples of PIDs
  // not in `traced` only move the device's stamp. Samples not newer than that stamp (stale or
  // repeated), or ahead of `now_us`, are ignored; of several of one process, the newest counts.
  void add(unsigned gpu, std::span<const NvmlProcessUtilization> samples, const Traced &traced,
           std::uint64_t now_us);

  // Forgets processes no longer traced (exited, or their PID reused).
  void retain(const Traced &traced);

  // Per process and GPU, from its first sample on that GPU on; never decreases.
  const std::map<Key, Busy> &busy() const { return busy_; }

private:
  Settings settings_;
  std::map<unsigned, std::uint64_t> last_seen_; // per GPU: the newest stamp NVML gave
  std::map<Key, Busy> busy_;
};

} // namespace neutracer
