// SPDX-License-Identifier: Apache-2.0
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
#include "os/os_tracing.h"

struct os_sched;
struct os_block;
struct os_net;

namespace neutracer {

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

// Use from one thread (the main loop): read() keeps the last values it returned.
class OsTracer : public OsTracing {
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
  void set_traced(const std::vector<std::pair<std::uint32_t, std::uint64_t>> &processes) override;

  // Counters of the traced processes that have any, by tgid. Never decrease between calls
  // (except tcp_connections).
  std::map<std::uint32_t, OsCounters> read() const override;

  OsTracerStats stats() const override;

private:
  // Destroys each kind of skeleton with its generated function (in the skeleton headers that
  // only os_tracer.cpp includes).
  struct Deleter {
    void operator()(os_sched *skeleton) const;
    void operator()(os_block *skeleton) const;
    void operator()(os_net *skeleton) const;
  };

  void fill_cpu_nodes();
  void update_bitmap();
  void sweep(const std::map<std::uint32_t, std::uint64_t> &keep);

  // Declared first, destroyed last: os_block and os_net use its maps.
  std::unique_ptr<os_sched, Deleter> sched_;
  std::unique_ptr<os_block, Deleter> block_;
  std::unique_ptr<os_net, Deleter> net_;          // null when network metrics are off
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
