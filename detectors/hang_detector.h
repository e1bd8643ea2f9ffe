// SPDX-License-Identifier: Apache-2.0
#pragma once
// Per-process GPU hang detector, fed one sample per scan. Pure: the caller passes the time, the
// process's CUDA readings and its CPU time; a process that exits is forgotten by the caller.
//
// Two shapes:
//  - call_in_progress: a CUDA call (a synchronisation, a blocking copy) has not returned for
//    call_seconds.
//  - launches_stalled: a process that launched kernels while observed, and still holds GPU
//    memory, has launched nothing for stalled_launch_seconds while using at least
//    busy_cpu_fraction of a core over that time. The driver spin-waits on a GPU that does not
//    finish, so a stuck process burns CPU; an idle inference server sleeps and stays silent.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace neutracer {

enum class HangReason : std::uint8_t { none, call_in_progress, launches_stalled };
std::string_view hang_reason_name(HangReason reason);

struct HangSettings {
  double call_seconds = 60;
  double stalled_launch_seconds = 120;
  double busy_cpu_fraction = 0.8; // of one core
};

struct HangSample {
  std::uint64_t now_ns = 0;
  double longest_call_seconds = 0; // longest CUDA call still in progress, 0 when none
  int call_api = 0;                // the API of that call, carried into the verdict
  std::uint64_t launches_total = 0;
  std::uint64_t gpu_bytes_in_use = 0;
  double cpu_seconds_total = 0; // user + system time of the whole process
};

struct HangVerdict {
  bool suspected = false;
  HangReason reason = HangReason::none;
  double stalled_seconds = 0; // how long the call has run, or since the last launch
  int call_api = 0;           // for call_in_progress; 0 otherwise
};

class HangDetector {
public:
  explicit HangDetector(HangSettings settings = {});

  // Samples of one process, in time order.
  HangVerdict evaluate(const HangSample &sample);

private:
  struct CpuReading {
    std::uint64_t time_ns = 0;
    double cpu_seconds = 0;
  };

  bool busy_over_last(std::uint64_t span_ns, const HangSample &sample);

  HangSettings settings_;
  std::uint64_t stalled_launch_ns_;

  std::optional<std::uint64_t> last_launches_;
  bool launched_while_observed_ = false;
  std::uint64_t last_launch_change_ns_ = 0;
  // CPU readings since the last launch change, thinned to a bounded number; the oldest one at
  // or before the start of the span being judged is kept.
  // A vector, as the other detectors' short histories: an empty std::deque holds ~600 bytes,
  // ~2 MiB over four of them at 1 000 processes.
  std::vector<CpuReading> cpu_readings_;
};

} // namespace neutracer
