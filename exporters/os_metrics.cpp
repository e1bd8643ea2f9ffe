// SPDX-License-Identifier: Apache-2.0
#include "exporters/os_metrics.h"

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <utility>

namespace neutracer {
namespace {

constexpr double kNsPerSecond = 1e9;

// One sample per process that has the source; `value` returns nullopt to skip a process.
template <typename Source>
void per_process(const std::vector<OsProcessView> &processes, MetricSink &sink,
                 std::string_view name, std::string_view help, MetricType type,
                 const std::function<const std::optional<Source> &(const OsProcessView &)> &source,
                 const std::function<std::optional<double>(const Source &)> &value) {
  sink.family(name, help, type);
  for (const auto &process : processes)
    if (const auto &s = source(process))
      if (const auto v = value(*s))
        sink.sample(process.labels, *v);
}

// One sample per process and label value (mode="user", mode="system", ...).
template <typename Source>
void per_label(
    const std::vector<OsProcessView> &processes, MetricSink &sink, std::string_view name,
    std::string_view help, MetricType type, std::string_view label,
    const std::function<const std::optional<Source> &(const OsProcessView &)> &source,
    const std::vector<std::pair<std::string, std::function<std::optional<double>(const Source &)>>>
        &values) {
  sink.family(name, help, type);
  for (const auto &process : processes)
    if (const auto &s = source(process))
      for (const auto &[label_value, value] : values)
        if (const auto v = value(*s))
          sink.sample(process.labels, {{label, label_value}}, *v);
}

const std::optional<ProcessOsSample> &proc_of(const OsProcessView &p) { return p.proc; }
const std::optional<OsCounters> &bpf_of(const OsProcessView &p) { return p.bpf; }

template <typename T> std::optional<double> number(T value) { return static_cast<double>(value); }

} // namespace

void write_os_metrics(const std::vector<OsProcessView> &processes, const SeriesSettings &settings,
                      MetricSink &sink) {
  using Proc = ProcessOsSample;
  using Bpf = OsCounters;
  const auto proc = [&](std::string_view name, std::string_view help, MetricType type,
                        std::function<std::optional<double>(const Proc &)> value) {
    per_process<Proc>(processes, sink, name, help, type, proc_of, value);
  };
  const auto bpf = [&](std::string_view name, std::string_view help, MetricType type,
                       std::function<std::optional<double>(const Bpf &)> value) {
    per_process<Bpf>(processes, sink, name, help, type, bpf_of, value);
  };

  // CPU and scheduling.
  per_label<Proc>(processes, sink, "neutracer_process_cpu_seconds_total",
                  "CPU time of the process from /proc/<pid>/stat (utime, stime), by mode.",
                  MetricType::counter, "mode", proc_of,
                  {{"user", [](const Proc &p) { return number(p.user_cpu_seconds); }},
                   {"system", [](const Proc &p) { return number(p.system_cpu_seconds); }}});
  bpf("neutracer_process_oncpu_seconds_total",
      "Time the process's threads ran on a CPU, summed over threads (scheduler tracepoints).",
      MetricType::counter,
      [](const Bpf &b) { return number(static_cast<double>(b.oncpu_ns) / kNsPerSecond); });
  bpf("neutracer_process_offcpu_seconds_total",
      "Time the process's threads were switched out (blocked or waiting for a CPU), summed over "
      "threads.",
      MetricType::counter,
      [](const Bpf &b) { return number(static_cast<double>(b.offcpu_ns) / kNsPerSecond); });
  bpf("neutracer_process_runqueue_wait_seconds_total",
      "Time the process's threads were runnable but waiting for a CPU, summed over threads.",
      MetricType::counter,
      [](const Bpf &b) { return number(static_cast<double>(b.runqueue_wait_ns) / kNsPerSecond); });
  bpf("neutracer_process_cpu_migrations_total", "Moves of the process's threads to another CPU.",
      MetricType::counter, [](const Bpf &b) { return number(b.migrations); });
  bpf("neutracer_process_numa_migrations_total",
      "Moves of the process's threads to a CPU of another NUMA node.", MetricType::counter,
      [](const Bpf &b) { return number(b.numa_migrations); });
  per_label<Proc>(processes, sink, "neutracer_process_context_switches_total",
                  "Context switches of the process's threads from /proc/<pid>/status, by type.",
                  MetricType::counter, "type", proc_of,
                  {{"voluntary",
                    [](const Proc &p) -> std::optional<double> {
                      if (!p.voluntary_ctxt_switches)
                        return std::nullopt;
                      return static_cast<double>(*p.voluntary_ctxt_switches);
                    }},
                   {"involuntary", [](const Proc &p) -> std::optional<double> {
                      if (!p.involuntary_ctxt_switches)
                        return std::nullopt;
                      return static_cast<double>(*p.involuntary_ctxt_switches);
                    }}});
  proc("neutracer_process_threads", "Threads of the process.", MetricType::gauge,
       [](const Proc &p) { return number(p.threads); });

  // Memory.
  proc("neutracer_process_resident_memory_bytes", "Resident set size of the process.",
       MetricType::gauge, [](const Proc &p) { return number(p.resident_bytes); });
  proc("neutracer_process_virtual_memory_bytes", "Virtual memory size of the process.",
       MetricType::gauge, [](const Proc &p) { return number(p.virtual_bytes); });
  per_label<Proc>(processes, sink, "neutracer_process_page_faults_total",
                  "Page faults of the process, by type (major: needed IO).", MetricType::counter,
                  "type", proc_of,
                  {{"major", [](const Proc &p) { return number(p.major_faults); }},
                   {"minor", [](const Proc &p) { return number(p.minor_faults); }}});

  // Block IO (BPF) and /proc IO.
  per_label<Bpf>(
      processes, sink, "neutracer_process_io_bytes_total",
      "Bytes of block-device requests the process submitted, by direction (writeback by kernel "
      "flusher threads is not the process's).",
      MetricType::counter, "direction", bpf_of,
      {{"read", [](const Bpf &b) { return number(b.io_read_bytes); }},
       {"write", [](const Bpf &b) { return number(b.io_write_bytes); }}});
  per_label<Bpf>(processes, sink, "neutracer_process_io_operations_total",
                 "Block-device requests the process submitted that completed, by direction.",
                 MetricType::counter, "direction", bpf_of,
                 {{"read", [](const Bpf &b) { return number(b.io_read_ops); }},
                  {"write", [](const Bpf &b) { return number(b.io_write_ops); }}});
  sink.family("neutracer_process_io_latency_seconds",
              "Latency of the process's block-device requests, from submission "
              "(scheduler queueing included) to completion.",
              MetricType::histogram);
  std::array<double, kOsIoLatencySlots - 1> bounds{};
  for (std::size_t slot = 0; slot < bounds.size(); ++slot)
    bounds[slot] = os_io_latency_upper_bound_seconds(slot);
  for (const auto &process : processes) {
    if (!settings.process_histograms || !process.bpf)
      continue;
    std::uint64_t count = 0;
    for (const auto slot_count : process.bpf->io_latency_slots)
      count += slot_count; // the last slot is above every bound: only in +Inf and _count
    if (count == 0)
      continue; // no block IO yet: 26 zero series would say only that
    sink.histogram(process.labels, {},
                   {bounds, std::span(process.bpf->io_latency_slots).first(bounds.size()),
                    static_cast<double>(process.bpf->io_latency_sum_ns) / kNsPerSecond, count});
  }
  per_label<Proc>(
      processes, sink, "neutracer_process_proc_io_bytes_total",
      "Storage bytes of the process from /proc/<pid>/io (read_bytes, write_bytes; writes count "
      "when pages are dirtied), by direction.",
      MetricType::counter, "direction", proc_of,
      {{"read",
        [](const Proc &p) -> std::optional<double> {
          if (!p.io)
            return std::nullopt;
          return static_cast<double>(p.io->read_bytes);
        }},
       {"write", [](const Proc &p) -> std::optional<double> {
          if (!p.io)
            return std::nullopt;
          return static_cast<double>(p.io->write_bytes);
        }}});

  // Network.
  per_label<Bpf>(processes, sink, "neutracer_process_network_bytes_total",
                 "Bytes the process sent and received through IPv4/IPv6 sockets, by direction.",
                 MetricType::counter, "direction", bpf_of,
                 {{"sent", [](const Bpf &b) { return number(b.net_tx_bytes); }},
                  {"received", [](const Bpf &b) { return number(b.net_rx_bytes); }}});
  per_label<Bpf>(processes, sink, "neutracer_process_network_packets_total",
                 "Packets of the process's IPv4/IPv6 sockets, by direction: TCP segments (ACKs and "
                 "retransmissions included) plus one per datagram send or receive call.",
                 MetricType::counter, "direction", bpf_of,
                 {{"sent", [](const Bpf &b) { return number(b.net_tx_packets); }},
                  {"received", [](const Bpf &b) { return number(b.net_rx_packets); }}});
  bpf("neutracer_process_tcp_connections",
      "TCP connections of the process in ESTABLISHED state (connected, accepted or used by it).",
      MetricType::gauge, [](const Bpf &b) {
        // Never below 0, even if a close was seen without its connection.
        return number(std::max<std::int64_t>(0, b.tcp_connections));
      });
}

std::vector<MetricFamily> os_families(const std::vector<OsProcessView> &processes,
                                      const SeriesSettings &settings) {
  FamilySink sink;
  write_os_metrics(processes, settings, sink);
  return sink.take();
}

MetricFamily os_network_source_family(const OsTracerStats &stats) {
  auto source = family("neutracer_os_network_source",
                       "Hooks behind the network metrics, 1 for the ones in use: tracepoint "
                       "(sock_send_length/sock_recv_length), fallback (TCP kernel functions), "
                       "none (network metrics off).",
                       MetricType::gauge);
  using Source = OsTracerStats::NetworkSource;
  for (const auto &[name, value] :
       {std::pair{"tracepoint", Source::tracepoints}, std::pair{"fallback", Source::fallback},
        std::pair{"none", Source::none}})
    source.samples.push_back({{{"source", name}}, stats.network == value ? 1.0 : 0.0});
  return source;
}

} // namespace neutracer
