// SPDX-License-Identifier: Apache-2.0
#include "os/os_tracer.h"

#include <algorithm>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <cerrno>
#include <charconv>
#include <cstdarg>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <spdlog/spdlog.h>
#include <string>

#include "bpf/neutracer_abi.h"
#include "common/bpf_errors.h"
#include "common/bpf_skeleton.h"
#include "common/monotonic_clock.h"
#include "os/os_proc_parsers.h"
#include "os_block.skel.h"
#include "os_net.skel.h"
#include "os_sched.skel.h"

namespace neutracer {

static_assert(NT_OS_IO_LATENCY_SLOTS == kOsIoLatencySlots);
static_assert(sizeof(nt_os_counters) == 8 * (15 + NT_OS_IO_LATENCY_SLOTS));
static_assert(sizeof(nt_os_counters) % 8 == 0); // per-CPU values are packed without padding
static_assert(offsetof(nt_os_counters, io_latency_slots) == 80);
static_assert(offsetof(nt_os_counters, net_tx_bytes) == 80 + 8 * NT_OS_IO_LATENCY_SLOTS);
static_assert(sizeof(nt_os_thread) == 32);
static_assert(sizeof(nt_os_io_start) == 24);
static_assert(sizeof(nt_os_socket) == 24);
static_assert(sizeof(nt_os_traced) == 16);

namespace {

constexpr const char *kKernelNeeds = "OS metrics need kernel BTF and BTF tracepoints (Linux 5.15+)";

TracerError load_error(const std::string &what, int error) {
  return bpf_load_error(what, error, kKernelNeeds);
}

// Whether the running kernel's BTF has a tracepoint: its btf_trace_<name> typedef.
class KernelBtf {
public:
  KernelBtf() : btf_(btf__load_vmlinux_btf()) {
    if (!btf_)
      throw TracerError(TracerError::Reason::unsupported,
                        "cannot load kernel BTF (/sys/kernel/btf/vmlinux): " + errno_text(errno) +
                            "; OS metrics need CONFIG_DEBUG_INFO_BTF");
  }
  ~KernelBtf() { btf__free(btf_); }
  KernelBtf(const KernelBtf &) = delete;
  KernelBtf &operator=(const KernelBtf &) = delete;
  bool has_tracepoint(const std::string &name) const {
    return btf__find_by_name_kind(btf_, ("btf_trace_" + name).c_str(), BTF_KIND_TYPEDEF) >= 0;
  }

private:
  struct btf *btf_;
};

void reuse_map(bpf_map *map, const bpf_map *owner) {
  if (const int error = bpf_map__reuse_fd(map, bpf_map__fd(owner)); error != 0)
    throw TracerError(TracerError::Reason::other, std::string("cannot share BPF map ") +
                                                      bpf_map__name(map) + ": " +
                                                      errno_text(error));
}

// Every (key, value) of a hash map: batched (one syscall per chunk) where the kernel can,
// else key by key. Entries may come and go meanwhile; what the walk sees is good enough.
template <typename Key, typename Value> std::vector<std::pair<Key, Value>> read_all(int fd) {
  std::vector<std::pair<Key, Value>> entries;
  constexpr std::uint32_t kChunk = 4096;
  std::vector<Key> keys(kChunk);
  std::vector<Value> values(kChunk);
  alignas(8) unsigned char in_batch[sizeof(Key) < 8 ? 8 : sizeof(Key)] = {};
  alignas(8) unsigned char out_batch[sizeof in_batch] = {};
  bool first = true;
  for (;;) {
    std::uint32_t count = kChunk;
    const int error = bpf_map_lookup_batch(fd, first ? nullptr : in_batch, out_batch, keys.data(),
                                           values.data(), &count, nullptr);
    if (error != 0 && error != -ENOENT)
      break;
    for (std::uint32_t i = 0; i < count; ++i)
      entries.emplace_back(keys[i], values[i]);
    if (error == -ENOENT)
      return entries;
    std::memcpy(in_batch, out_batch, sizeof in_batch);
    first = false;
  }
  entries.clear();
  Key key{}, next{};
  const Key *previous = nullptr;
  while (bpf_map_get_next_key(fd, previous, &next) == 0) {
    Value value{};
    if (bpf_map_lookup_elem(fd, &next, &value) == 0)
      entries.emplace_back(next, value);
    key = next;
    previous = &key;
  }
  return entries;
}

template <typename Key> std::vector<Key> read_keys(int fd) {
  std::vector<Key> keys;
  Key key{}, next{};
  const Key *previous = nullptr;
  while (bpf_map_get_next_key(fd, previous, &next) == 0) {
    keys.push_back(next);
    key = next;
    previous = &key;
  }
  return keys;
}

// kernel.pid_max bounds tgids (4194304 at most on 64-bit); the bitmap covers them all.
std::uint64_t read_pid_max() {
  constexpr std::uint64_t kLimit = 4194304; // PID_MAX_LIMIT on 64-bit
  std::ifstream in("/proc/sys/kernel/pid_max");
  std::uint64_t pid_max = 0;
  if (!(in >> pid_max) || pid_max == 0 || pid_max > kLimit)
    return kLimit;
  return pid_max;
}

void add(OsCounters &sum, const nt_os_counters &cpu) {
  sum.oncpu_ns += cpu.oncpu_ns;
  sum.offcpu_ns += cpu.offcpu_ns;
  sum.runqueue_wait_ns += cpu.runqueue_wait_ns;
  sum.migrations += cpu.migrations;
  sum.numa_migrations += cpu.numa_migrations;
  sum.io_read_bytes += cpu.io_read_bytes;
  sum.io_write_bytes += cpu.io_write_bytes;
  sum.io_read_ops += cpu.io_read_ops;
  sum.io_write_ops += cpu.io_write_ops;
  sum.io_latency_sum_ns += cpu.io_latency_sum_ns;
  for (std::size_t i = 0; i < kOsIoLatencySlots; ++i)
    sum.io_latency_slots[i] += cpu.io_latency_slots[i];
  sum.net_tx_bytes += cpu.net_tx_bytes;
  sum.net_rx_bytes += cpu.net_rx_bytes;
  sum.net_tx_packets += cpu.net_tx_packets;
  sum.net_rx_packets += cpu.net_rx_packets;
  // +1 and -1 of one connection may land on different CPUs: the sum is what counts.
  sum.tcp_connections = static_cast<std::int64_t>(static_cast<std::uint64_t>(sum.tcp_connections) +
                                                  cpu.tcp_connections);
}

} // namespace

void OsTracer::Deleter::operator()(os_sched *skeleton) const { os_sched__destroy(skeleton); }
void OsTracer::Deleter::operator()(os_block *skeleton) const { os_block__destroy(skeleton); }
void OsTracer::Deleter::operator()(os_net *skeleton) const { os_net__destroy(skeleton); }

OsTracer::OsTracer(const OsTracerSettings &settings) {
  route_libbpf_logs_to_spdlog();
  bool network_tracepoints = false;
  {
    const KernelBtf btf;
    block_io_start_ = btf.has_tracepoint("block_io_start");
    network_tracepoints = settings.network == OsTracerSettings::Network::automatic &&
                          btf.has_tracepoint("sock_send_length") &&
                          btf.has_tracepoint("sock_recv_length");
  }
  const std::uint64_t ns_per_tick =
      1'000'000'000ull / static_cast<std::uint64_t>(std::max(1L, settings.ticks_per_second));
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0)
    throw TracerError(TracerError::Reason::other,
                      "cannot count possible CPUs: " + errno_text(cpus));
  bitmap_words_ = static_cast<std::uint32_t>((read_pid_max() + 63) / 64);

  sched_.reset(open_and_load_skeleton<os_sched>(
      "os_sched", os_sched__open_opts, os_sched__load, os_sched__destroy,
      [&](os_sched *skeleton) {
        bpf_map__set_max_entries(skeleton->maps.traced_bits, bitmap_words_);
        bpf_map__set_max_entries(skeleton->maps.traced_tgids, settings.max_processes);
        bpf_map__set_max_entries(skeleton->maps.os_counters, settings.max_processes);
        bpf_map__set_max_entries(skeleton->maps.os_threads, settings.max_threads);
        bpf_map__set_max_entries(skeleton->maps.os_cpu_node, static_cast<std::uint32_t>(cpus));
        skeleton->rodata->ns_per_tick = ns_per_tick;
      },
      kKernelNeeds));
  // os_block and os_net use os_sched's process table, counters and stats, and its clock; each
  // sizes its own table of things in flight.
  const auto share_sched_maps = [&](auto *skeleton, bpf_map *own_table, std::uint32_t entries) {
    reuse_map(skeleton->maps.traced_bits, sched_->maps.traced_bits);
    reuse_map(skeleton->maps.traced_tgids, sched_->maps.traced_tgids);
    reuse_map(skeleton->maps.os_counters, sched_->maps.os_counters);
    reuse_map(skeleton->maps.os_stats, sched_->maps.os_stats);
    bpf_map__set_max_entries(own_table, entries);
    skeleton->rodata->ns_per_tick = ns_per_tick;
  };
  block_.reset(open_and_load_skeleton<os_block>(
      "os_block", os_block__open_opts, os_block__load, os_block__destroy,
      [&](os_block *skeleton) {
        share_sched_maps(skeleton, skeleton->maps.os_io_inflight, settings.max_inflight_io);
        bpf_program__set_autoload(skeleton->progs.os_block_io_start, block_io_start_);
        bpf_program__set_autoload(skeleton->progs.os_block_rq_insert, !block_io_start_);
        bpf_program__set_autoload(skeleton->progs.os_block_rq_issue, !block_io_start_);
      },
      kKernelNeeds));
  try {
    net_.reset(open_and_load_skeleton<os_net>(
        "os_net", os_net__open_opts, os_net__load, os_net__destroy,
        [&](os_net *skeleton) {
          share_sched_maps(skeleton, skeleton->maps.os_sockets, settings.max_sockets);
          bpf_program__set_autoload(skeleton->progs.os_sock_send_length, network_tracepoints);
          bpf_program__set_autoload(skeleton->progs.os_sock_recv_length, network_tracepoints);
          bpf_program__set_autoload(skeleton->progs.os_tcp_sendmsg_exit, !network_tracepoints);
          bpf_program__set_autoload(skeleton->progs.os_tcp_cleanup_rbuf, !network_tracepoints);
        },
        kKernelNeeds));
  } catch (const TracerError &error) {
    if (network_tracepoints)
      throw;
    // Some kernels refuse fentry/fexit (EPERM on this project's 6.18 machines, even as root).
    spdlog::warn("network metrics are off: {}", error.what());
  }
  fill_cpu_nodes();

  if (const int error = os_sched__attach(sched_.get()); error != 0)
    throw load_error("attach os_sched", error);
  if (const int error = os_block__attach(block_.get()); error != 0)
    throw load_error("attach os_block", error);
  if (net_) {
    if (const int error = os_net__attach(net_.get()); error != 0) {
      if (network_tracepoints)
        throw load_error("attach os_net", error);
      spdlog::warn("network metrics are off: cannot attach os_net: {}", errno_text(error));
      net_.reset();
    }
  }
  network_ = !net_                 ? OsTracerStats::NetworkSource::none
             : network_tracepoints ? OsTracerStats::NetworkSource::tracepoints
                                   : OsTracerStats::NetworkSource::fallback;
  spdlog::info("OS tracing: block IO from {}, network from {}",
               block_io_start_ ? "block_io_start" : "block_rq_insert/issue (pre-6.5 fallback)",
               !net_                 ? "nothing (off)"
               : network_tracepoints ? "sock_send_length/sock_recv_length"
                                     : "tcp_sendmsg/tcp_cleanup_rbuf (fallback, TCP only)");
}

OsTracer::~OsTracer() {
  // Links go with their skeletons; os_net and os_block first (members destroy in reverse).
  net_.reset();
  block_.reset();
  sched_.reset();
}

// NUMA node of each CPU, for numa_migrations; hosts without /sys/devices/system/node keep 0s.
void OsTracer::fill_cpu_nodes() {
  const int fd = bpf_map__fd(sched_->maps.os_cpu_node);
  const auto cpus = static_cast<std::uint32_t>(libbpf_num_possible_cpus());
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/sys/devices/system/node", ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!name.starts_with("node") || name.size() == 4 ||
        name.find_first_not_of("0123456789", 4) != std::string::npos)
      continue;
    std::uint32_t node = 0;
    if (std::from_chars(name.data() + 4, name.data() + name.size(), node).ec != std::errc())
      continue;
    std::ifstream in(it->path() / "cpulist");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    const auto list = parse_cpu_list(text);
    if (!list)
      continue;
    for (const auto cpu : *list)
      if (cpu < cpus)
        bpf_map_update_elem(fd, &cpu, &node, BPF_ANY);
  }
}

void OsTracer::set_traced(const std::vector<std::pair<std::uint32_t, std::uint64_t>> &processes) {
  const std::map<std::uint32_t, std::uint64_t> wanted(processes.begin(), processes.end());
  const int traced_fd = bpf_map__fd(sched_->maps.traced_tgids);
  const int counters_fd = bpf_map__fd(sched_->maps.os_counters);
  for (const auto &[tgid, start] : traced_) {
    const auto it = wanted.find(tgid);
    if (it != wanted.end() && it->second == start)
      continue;
    bpf_map_delete_elem(traced_fd, &tgid); // ENOENT when the kernel dropped it at exit
    bpf_map_delete_elem(counters_fd, &tgid);
    last_.erase(tgid);
  }
  std::map<std::uint32_t, std::uint64_t> now_traced;
  for (const auto &[tgid, start] : wanted) {
    const auto it = traced_.find(tgid);
    if (it != traced_.end() && it->second == start) {
      now_traced.emplace(tgid, start); // unchanged: never re-added after the kernel dropped it
      continue;
    }
    const nt_os_traced value{start, monotonic_ns()};
    if (bpf_map_update_elem(traced_fd, &tgid, &value, BPF_ANY) == 0)
      now_traced.emplace(tgid, start);
    else
      ++traced_map_full_; // retried at the next call
  }
  traced_ = std::move(now_traced);
  update_bitmap();
  sweep(traced_);
}

// Writes the words of traced_bits that changed. Tgids beyond pid_max (raised after load) have
// no word: the BPF side then falls back to the hash.
void OsTracer::update_bitmap() {
  std::map<std::uint32_t, std::uint64_t> words;
  for (const auto &[tgid, start] : traced_)
    if (tgid / 64 < bitmap_words_)
      words[tgid / 64] |= std::uint64_t{1} << (tgid % 64);
  const int fd = bpf_map__fd(sched_->maps.traced_bits);
  for (const auto &[word, bits] : bitmap_)
    if (!words.contains(word)) {
      const std::uint64_t zero = 0;
      bpf_map_update_elem(fd, &word, &zero, BPF_ANY);
    }
  for (const auto &[word, bits] : words) {
    const auto it = bitmap_.find(word);
    if (it == bitmap_.end() || it->second != bits)
      bpf_map_update_elem(fd, &word, &bits, BPF_ANY);
  }
  bitmap_ = std::move(words);
}

// Drops entries of processes no longer traced: those the BPF side created while racing with a
// removal, and per-thread, per-socket and per-request state of removed processes.
void OsTracer::sweep(const std::map<std::uint32_t, std::uint64_t> &keep) {
  const int counters_fd = bpf_map__fd(sched_->maps.os_counters);
  for (const auto tgid : read_keys<std::uint32_t>(counters_fd))
    if (!keep.contains(tgid))
      bpf_map_delete_elem(counters_fd, &tgid);
  const auto sweep_map = [&]<typename Key, typename Value>(bpf_map *map, const Key *,
                                                           const Value *) {
    const int fd = bpf_map__fd(map);
    for (const auto &[key, value] : read_all<Key, Value>(fd))
      if (!keep.contains(value.tgid))
        bpf_map_delete_elem(fd, &key);
  };
  sweep_map(sched_->maps.os_threads, static_cast<const std::uint32_t *>(nullptr),
            static_cast<const nt_os_thread *>(nullptr));
  sweep_map(block_->maps.os_io_inflight, static_cast<const std::uint64_t *>(nullptr),
            static_cast<const nt_os_io_start *>(nullptr));
  if (net_)
    sweep_map(net_->maps.os_sockets, static_cast<const std::uint64_t *>(nullptr),
              static_cast<const nt_os_socket *>(nullptr));
}

std::map<std::uint32_t, OsCounters> OsTracer::read() const {
  std::map<std::uint32_t, OsCounters> result;
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0)
    return result;
  const int counters_fd = bpf_map__fd(sched_->maps.os_counters);
  std::vector<nt_os_counters> per_cpu(static_cast<std::size_t>(cpus));
  for (const auto tgid : read_keys<std::uint32_t>(counters_fd)) {
    if (!traced_.contains(tgid) || bpf_map_lookup_elem(counters_fd, &tgid, per_cpu.data()) != 0)
      continue;
    auto &sum = result[tgid];
    for (const auto &cpu : per_cpu)
      add(sum, cpu);
  }
  // Time since each thread's last switch counts as on or off CPU as it was then: a thread on
  // its CPU (or off it) for a long time counts up to now.
  const std::uint64_t now = monotonic_ns();
  for (const auto &[tid, thread] :
       read_all<std::uint32_t, nt_os_thread>(bpf_map__fd(sched_->maps.os_threads))) {
    if (!traced_.contains(thread.tgid) || now <= thread.seen_ns)
      continue;
    auto &sum = result[thread.tgid];
    (thread.on_cpu ? sum.oncpu_ns : sum.offcpu_ns) += now - thread.seen_ns;
  }
  for (auto &[tgid, sum] : result) {
    auto &last = last_[tgid];
    sum.oncpu_ns = std::max(sum.oncpu_ns, last.oncpu_ns);
    sum.offcpu_ns = std::max(sum.offcpu_ns, last.offcpu_ns);
    sum.runqueue_wait_ns = std::max(sum.runqueue_wait_ns, last.runqueue_wait_ns);
    last = sum;
  }
  return result;
}

OsTracerStats OsTracer::stats() const {
  OsTracerStats stats;
  stats.traced_map_full = traced_map_full_;
  stats.network = network_;
  stats.block_io_start = block_io_start_;
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0)
    return stats;
  std::vector<std::uint64_t> values(static_cast<std::size_t>(cpus));
  const int fd = bpf_map__fd(sched_->maps.os_stats);
  const auto sum = [&](std::uint32_t index) {
    std::uint64_t total = 0;
    if (bpf_map_lookup_elem(fd, &index, values.data()) == 0)
      for (const auto value : values)
        total += value;
    return total;
  };
  stats.counters_map_full = sum(NT_OS_STAT_COUNTERS_MAP_FULL);
  stats.threads_map_full = sum(NT_OS_STAT_THREADS_MAP_FULL);
  stats.io_map_full = sum(NT_OS_STAT_IO_MAP_FULL);
  stats.sockets_map_full = sum(NT_OS_STAT_SOCKETS_MAP_FULL);
  return stats;
}

} // namespace neutracer
