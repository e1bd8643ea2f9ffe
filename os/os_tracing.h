// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the main loop needs from the BPF side of OS metrics, and the figures it returns. OsTracer
// is the real one; unit tests drive the loop without it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace neutracer {

// Slots of the block IO latency histogram: slot i counts [2^i, 2^(i+1)) microseconds (slot 0
// also takes < 1 us); the last slot is the overflow (>= 2^(kOsIoLatencySlots-1) us).
inline constexpr std::size_t kOsIoLatencySlots = 24;

// Upper bound in seconds of slot i < kOsIoLatencySlots - 1 (the last slot has none: +Inf).
constexpr double os_io_latency_upper_bound_seconds(std::size_t slot) {
  return static_cast<double>(std::uint64_t{2} << slot) / 1e6; // divided: 4e-06, not 4.000...1e-06
}

// One process's counters, summed over CPUs and threads. On- and off-CPU times run up to the read
// (a thread on its CPU since long ago counts up to now); run-queue waits count once they end.
struct OsCounters {
  std::uint64_t oncpu_ns = 0;
  std::uint64_t offcpu_ns = 0;        // not running: blocked, or waiting for a CPU
  std::uint64_t runqueue_wait_ns = 0; // the part of offcpu_ns spent waiting for a CPU
  std::uint64_t migrations = 0;
  std::uint64_t numa_migrations = 0;
  std::uint64_t io_read_bytes = 0; // block layer, requests submitted in the process's context
  std::uint64_t io_write_bytes = 0;
  std::uint64_t io_read_ops = 0;
  std::uint64_t io_write_ops = 0;
  std::uint64_t io_latency_sum_ns = 0;
  std::array<std::uint64_t, kOsIoLatencySlots> io_latency_slots{}; // not cumulative
  std::uint64_t net_tx_bytes = 0;                                  // IPv4/IPv6 sockets
  std::uint64_t net_rx_bytes = 0;
  std::uint64_t net_tx_packets = 0; // TCP segments + one per datagram call
  std::uint64_t net_rx_packets = 0;
  std::int64_t tcp_connections = 0; // ESTABLISHED now (gauge)
  bool operator==(const OsCounters &) const = default;
};

struct OsTracerStats {
  // Insertions refused because the map was full, by map.
  std::uint64_t traced_map_full = 0; // user space: set_traced could not add a process
  std::uint64_t counters_map_full = 0;
  std::uint64_t threads_map_full = 0;
  std::uint64_t io_map_full = 0;
  std::uint64_t sockets_map_full = 0;
  enum class NetworkSource { tracepoints, fallback, none } network = NetworkSource::none;
  bool block_io_start = false; // false: block_rq_insert/issue fallback (before 6.5)
};

class OsTracing {
public:
  virtual ~OsTracing() = default;
  // The processes to trace: (tgid, process start in ns after boot).
  virtual void
  set_traced(const std::vector<std::pair<std::uint32_t, std::uint64_t>> &processes) = 0;
  virtual std::map<std::uint32_t, OsCounters> read() const = 0;
  virtual OsTracerStats stats() const = 0;
};

} // namespace neutracer
