#pragma once
// The kernel-facing side of OS metrics for traced processes: loads os_sched, os_block and os_net
// (one set of shared maps), keeps the traced-process table and reads per-process counters.
// Thin: meaning lives in the exporters. Independent of CudaTracer; both can be loaded at once.
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "common/bpf_errors.h" // TracerError

struct os_sched;
struct os_block;
struct os_net;

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

struct OsTracerSettings {
  std::uint32_t max_processes = 4096; // traced_tgids and os_counters
  std::uint32_t max_threads = 65536;  // per-thread scheduler state
  std::uint32_t max_inflight_io = 16384;
  std::uint32_t max_sockets = 16384; // TCP sockets of traced processes
  long ticks_per_second = 100;       // sysconf(_SC_CLK_TCK): start times compare in ticks
  // automatic: sock_send_length/sock_recv_length tracepoints where the kernel has them (6.3+),
  // else fexit/tcp_sendmsg + fentry/tcp_cleanup_rbuf (TCP only). Forcing the fallback is for
  // tests. A fallback the kernel refuses turns network metrics off instead of failing.
  enum class Network { automatic, fallback } network = Network::automatic;
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

// Use from one thread (the main loop): read() keeps the last values it returned.
class OsTracer {
public:
  explicit OsTracer(const OsTracerSettings &settings); // loads and attaches; throws TracerError
  ~OsTracer();
  OsTracer(const OsTracer &) = delete;
  OsTracer &operator=(const OsTracer &) = delete;

  // The processes to trace: (tgid, process start in ns after boot; tick precision is enough,
  // 0 matches any start). Adds new ones, drops missing ones and everything kept for them
  // (counters, thread, socket and IO entries). A process seen with a new start is a new
  // process: its counters restart. The kernel drops a process itself when its last thread exits;
  // its counters stay readable until it is missing here.
  void set_traced(const std::vector<std::pair<std::uint32_t, std::uint64_t>> &processes);

  // Counters of the traced processes that have any, by tgid. Never decrease between calls
  // (except tcp_connections).
  std::map<std::uint32_t, OsCounters> read() const;

  OsTracerStats stats() const;

private:
  struct SchedDeleter {
    void operator()(os_sched *skeleton) const;
  };
  struct BlockDeleter {
    void operator()(os_block *skeleton) const;
  };
  struct NetDeleter {
    void operator()(os_net *skeleton) const;
  };

  void fill_cpu_nodes();
  void update_bitmap();
  void sweep(const std::map<std::uint32_t, std::uint64_t> &keep);

  // Declared first, destroyed last: os_block and os_net use its maps.
  std::unique_ptr<os_sched, SchedDeleter> sched_;
  std::unique_ptr<os_block, BlockDeleter> block_;
  std::unique_ptr<os_net, NetDeleter> net_;       // null when network metrics are off
  std::map<std::uint32_t, std::uint64_t> traced_; // what traced_tgids was given
  std::map<std::uint32_t, std::uint64_t> bitmap_; // non-zero words of traced_bits
  std::uint32_t bitmap_words_ = 0;
  std::uint64_t traced_map_full_ = 0;
  OsTracerStats::NetworkSource network_ = OsTracerStats::NetworkSource::none;
  bool block_io_start_ = false;
  // Last values returned, so that scheduler times stay monotonic although open intervals are
  // read from a second map (a switch between the two reads could otherwise move a value back).
  mutable std::map<std::uint32_t, OsCounters> last_;
};

} // namespace neutracer
