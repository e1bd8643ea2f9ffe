// SPDX-License-Identifier: Apache-2.0
// Our Prometheus text writer (exposition/) against prometheus-cpp's TextSerializer, for the
// README's "why our own writer" (issue 19). Built and run by tests/bench/exposition_compare.sh
// only: prometheus-cpp is no dependency of the daemon or of its tests.
//
//   exposition_compare bench PROCS ROUNDS OUTDIR   timings; writes both outputs of the last round
//   exposition_compare cases OUTDIR                small edge-case files for promtool
//
// bench: PROCS processes of 124 series each (the families and labels of the daemon's CUDA and OS
// exporters, tests/fixtures/golden/*.prom), generated once into each writer's own model by the
// same loop. Each round times, in alternating order, (1) our render_text and (2) prometheus-cpp's
// TextSerializer::Serialize, each into a fresh std::ostringstream (as daemon/http_routes.cpp
// does), and (3, 4) building each model from the process records plus serialising it. Peak extra
// memory: the most bytes the writer held through operator new above what was held before it
// started (the output stream's buffer included), counted by a replaced global operator new.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "exposition/exposition.h"

// ---- allocation counting ------------------------------------------------------------------

namespace {
std::size_t g_live = 0;
std::size_t g_peak = 0;

void *counted_alloc(std::size_t size) {
  void *p = std::malloc(size == 0 ? 1 : size);
  if (p == nullptr)
    throw std::bad_alloc();
  g_live += malloc_usable_size(p);
  g_peak = std::max(g_peak, g_live);
  return p;
}

void counted_free(void *p) noexcept {
  if (p == nullptr)
    return;
  g_live -= malloc_usable_size(p);
  std::free(p);
}
} // namespace

void *operator new(std::size_t size) { return counted_alloc(size); }
void *operator new[](std::size_t size) { return counted_alloc(size); }
void operator delete(void *p) noexcept { counted_free(p); }
void operator delete[](void *p) noexcept { counted_free(p); }
void operator delete(void *p, std::size_t) noexcept { counted_free(p); }
void operator delete[](void *p, std::size_t) noexcept { counted_free(p); }

namespace {

// ---- the process records and the families generated from them ------------------------------

struct Proc {
  std::string pid, comm, container, ns, pod;
};

constexpr const char *kKernels[] = {"vectorized_elementwise_kernel",
                                    "ampere_sgemm_128x64_tn",
                                    "reduce_kernel",
                                    "softmax_warp_forward",
                                    "softmax_warp_backward",
                                    "cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4",
                                    "elementwise_kernel",
                                    "index_elementwise_kernel",
                                    "layer_norm_kernel",
                                    "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                                    "[unresolved]",
                                    "[cuda_graph]"};
constexpr const char *kComms[] = {"python3",    "pt_main_thread", "trainer",       "torchrun",
                                  "nccl-tests", "vllm-worker",    "jupyter-kernel"};
constexpr double kSyncBounds[] = {1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01,
                                  0.05, 0.1,  0.5,  1,    5,    10,   60};

std::vector<Proc> make_procs(int count) {
  std::vector<Proc> procs;
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < count; ++i) {
    Proc p;
    p.pid = std::to_string(100000 + 37 * i);
    p.comm = kComms[i % 7];
    if (i % 2 == 0) { // half of them in Kubernetes pods
      char hex[65];
      for (int k = 0; k < 64; ++k) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        hex[k] = "0123456789abcdef"[x & 15];
      }
      hex[64] = 0;
      p.container = hex;
      p.ns = "ml-team-" + std::to_string(i % 13);
      p.pod = "train-job-" + std::to_string(i / 8) + "-worker-" + std::to_string(i % 8);
    }
    procs.push_back(std::move(p));
  }
  return procs;
}

// Deterministic values of the shapes the exporters produce: counts, byte sizes, seconds.
struct Values {
  std::uint64_t s = 88172645463325252ull;
  std::uint64_t next() { return s ^= s << 13, s ^= s >> 7, s ^= s << 17; }
  double count() { return static_cast<double>(next() % 10000000); }
  double bytes() { return static_cast<double>((next() % 4096) * 1048576); }
  double seconds() { return static_cast<double>(next() % 100000000) / 1024.0; }
  double rate() { return static_cast<double>(next() % 1000000) * 1234.567; }
};

using Labels = std::vector<std::pair<std::string, std::string>>;

Labels proc_labels(const Proc &p) {
  Labels l{{"pid", p.pid}, {"comm", p.comm}};
  if (!p.container.empty()) {
    l.emplace_back("container", p.container);
    l.emplace_back("namespace", p.ns);
    l.emplace_back("pod", p.pod);
  }
  return l;
}

Labels plus(Labels l, const char *k1, const char *v1, const char *k2 = nullptr,
            const char *v2 = nullptr) {
  l.emplace_back(k1, v1);
  if (k2 != nullptr)
    l.emplace_back(k2, v2);
  return l;
}

enum class Type { counter, gauge, histogram };

// Calls sink.family(name, help, type), sink.sample(labels, value) and
// sink.histogram(labels, bounds, per-bucket counts, sum, count): 124 series per process.
template <typename Sink> void generate(const std::vector<Proc> &procs, Sink &sink) {
  Values v;
  const auto each = [&](const char *name, const char *help, Type type,
                        const std::function<void(const Labels &)> &emit) {
    sink.family(name, help, type);
    for (const auto &p : procs)
      emit(proc_labels(p));
  };
  const auto simple = [&](const char *name, const char *help, Type type, const char *key,
                          std::vector<const char *> values, double (Values::*gen)()) {
    each(name, help, type, [&](const Labels &l) {
      if (key == nullptr)
        sink.sample(l, (v.*gen)());
      for (const char *value : values)
        sink.sample(plus(l, key, value), (v.*gen)());
    });
  };
  each("neutracer_cuda_kernel_launches_total",
       "CUDA kernel launches by kernel name (demangled, shortened) and GPU.", Type::counter,
       [&](const Labels &l) {
         for (const char *k : kKernels)
           sink.sample(plus(l, "gpu", "0", "kernel", k), v.count());
       });
  const std::vector<const char *> kinds{"device", "managed"};
  const auto per_kind = [&](const char *name, const char *help, Type type,
                            double (Values::*gen)()) {
    each(name, help, type, [&](const Labels &l) {
      for (const char *kind : kinds)
        sink.sample(plus(l, "gpu", "0", "kind", kind), (v.*gen)());
    });
  };
  per_kind("neutracer_cuda_memory_used_bytes",
           "CUDA memory allocated through the driver and not yet freed.", Type::gauge,
           &Values::bytes);
  per_kind("neutracer_cuda_memory_peak_bytes",
           "Highest value of neutracer_cuda_memory_used_bytes seen.", Type::gauge, &Values::bytes);
  per_kind("neutracer_cuda_memory_allocations_total", "Successful CUDA allocations.", Type::counter,
           &Values::count);
  per_kind("neutracer_cuda_memory_frees_total", "Frees of allocations neutracerd saw being made.",
           Type::counter, &Values::count);
  per_kind("neutracer_cuda_memory_allocated_bytes_total",
           "Bytes allocated by successful CUDA allocations.", Type::counter, &Values::bytes);
  per_kind("neutracer_cuda_memory_freed_bytes_total",
           "Bytes released by frees of allocations neutracerd saw.", Type::counter, &Values::bytes);
  simple("neutracer_cuda_memory_unknown_frees_total",
         "Frees of memory allocated before neutracerd attached (size unknown).", Type::counter,
         nullptr, {}, &Values::count);
  const std::vector<const char *> directions{"h2d", "d2h", "d2d"};
  for (const auto &[name, help, gen] :
       {std::tuple{"neutracer_cuda_memcpy_bytes_total",
                   "Bytes copied by CUDA memcpy calls, by GPU (the calling thread's current "
                   "device) and direction.",
                   &Values::bytes},
        std::tuple{"neutracer_cuda_memcpy_calls_total",
                   "Successful CUDA memcpy calls, by GPU and direction.", &Values::count}}) {
    each(name, help, Type::counter, [&](const Labels &l) {
      for (const char *d : directions)
        sink.sample(plus(l, "gpu", "0", "direction", d), (v.*gen)());
    });
  }
  simple("neutracer_cuda_memcpy_throughput_bytes_per_second",
         "Copy throughput, exponentially smoothed over cuda.throughput_window.", Type::gauge,
         "direction", directions, &Values::rate);
  const std::vector<const char *> apis{"cuStreamSynchronize", "cuEventSynchronize"};
  simple("neutracer_cuda_sync_wait_seconds_total",
         "Seconds spent in CUDA synchronisation calls that returned.", Type::counter, "api", apis,
         &Values::seconds);
  const std::vector<double> sync_bounds(std::begin(kSyncBounds), std::end(kSyncBounds));
  each("neutracer_cuda_sync_wait_duration_seconds", "Durations of CUDA synchronisation calls.",
       Type::histogram, [&](const Labels &l) {
         for (const char *api : apis) {
           std::vector<std::uint64_t> counts;
           std::uint64_t total = 0;
           for (std::size_t b = 0; b < sync_bounds.size(); ++b)
             total += counts.emplace_back(v.next() % 5000);
           total += v.next() % 10;
           sink.histogram(plus(l, "api", api), sync_bounds, counts, v.seconds(), total);
         }
       });
  simple("neutracer_cuda_sync_in_progress_seconds",
         "Age of the longest synchronisation call still waiting (0 if none).", Type::gauge, "api",
         apis, &Values::seconds);
  each("neutracer_cuda_api_errors_total",
       "CUDA driver calls that returned an error, by API and CUresult.", Type::counter,
       [&](const Labels &l) {
         sink.sample(plus(l, "api", "cuMemAlloc_v2", "error", "CUDA_ERROR_OUT_OF_MEMORY"),
                     v.count());
       });
  // OS families (51 series per process).
  simple("neutracer_process_cpu_seconds_total",
         "CPU time of the process from /proc/<pid>/stat (utime, stime), by mode.", Type::counter,
         "mode", {"user", "system"}, &Values::seconds);
  simple("neutracer_process_oncpu_seconds_total",
         "Time the process's threads ran on a CPU, summed over threads (scheduler tracepoints).",
         Type::counter, nullptr, {}, &Values::seconds);
  simple("neutracer_process_offcpu_seconds_total",
         "Time the process's threads were switched out (blocked or waiting for a CPU), summed "
         "over threads.",
         Type::counter, nullptr, {}, &Values::seconds);
  simple("neutracer_process_runqueue_wait_seconds_total",
         "Time the process's threads were runnable but waiting for a CPU, summed over threads.",
         Type::counter, nullptr, {}, &Values::seconds);
  simple("neutracer_process_cpu_migrations_total", "Moves of the process's threads to another CPU.",
         Type::counter, nullptr, {}, &Values::count);
  simple("neutracer_process_numa_migrations_total",
         "Moves of the process's threads to a CPU of another NUMA node.", Type::counter, nullptr,
         {}, &Values::count);
  simple("neutracer_process_context_switches_total",
         "Context switches of the process's threads from /proc/<pid>/status, by type.",
         Type::counter, "type", {"voluntary", "involuntary"}, &Values::count);
  simple("neutracer_process_threads", "Threads of the process.", Type::gauge, nullptr, {},
         &Values::count);
  simple("neutracer_process_resident_memory_bytes", "Resident set size of the process.",
         Type::gauge, nullptr, {}, &Values::bytes);
  simple("neutracer_process_virtual_memory_bytes", "Virtual memory size of the process.",
         Type::gauge, nullptr, {}, &Values::bytes);
  simple("neutracer_process_page_faults_total",
         "Page faults of the process, by type (major: needed IO).", Type::counter, "type",
         {"major", "minor"}, &Values::count);
  simple("neutracer_process_io_bytes_total",
         "Bytes of block-device requests the process submitted, by direction (writeback by "
         "kernel flusher threads is not the process's).",
         Type::counter, "direction", {"read", "write"}, &Values::bytes);
  simple("neutracer_process_io_operations_total",
         "Block-device requests the process submitted that completed, by direction.", Type::counter,
         "direction", {"read", "write"}, &Values::count);
  std::vector<double> io_bounds; // os_io_latency_upper_bound_seconds, 24 slots, last = overflow
  for (std::size_t slot = 0; slot + 1 < 24; ++slot)
    io_bounds.push_back(static_cast<double>(std::uint64_t{2} << slot) / 1e6);
  each("neutracer_process_io_latency_seconds",
       "Latency of the process's block-device requests, from submission (scheduler queueing "
       "included) to completion.",
       Type::histogram, [&](const Labels &l) {
         std::vector<std::uint64_t> counts;
         std::uint64_t total = 0;
         for (std::size_t b = 0; b < io_bounds.size(); ++b)
           total += counts.emplace_back(v.next() % 3000);
         sink.histogram(l, io_bounds, counts, v.seconds(), total);
       });
  simple("neutracer_process_proc_io_bytes_total",
         "Storage bytes of the process from /proc/<pid>/io (read_bytes, write_bytes; writes "
         "count when pages are dirtied), by direction.",
         Type::counter, "direction", {"read", "write"}, &Values::bytes);
  simple("neutracer_process_network_bytes_total",
         "Bytes the process sent and received through IPv4/IPv6 sockets, by direction.",
         Type::counter, "direction", {"sent", "received"}, &Values::bytes);
  simple("neutracer_process_network_packets_total",
         "Packets of the process's IPv4/IPv6 sockets, by direction: TCP segments (ACKs and "
         "retransmissions included) plus one per datagram send or receive call.",
         Type::counter, "direction", {"sent", "received"}, &Values::count);
  simple("neutracer_process_tcp_connections",
         "TCP connections of the process in ESTABLISHED state (connected, accepted or used by it).",
         Type::gauge, nullptr, {}, &Values::count);
}

// Our model.
struct OursSink {
  std::vector<neutracer::MetricFamily> families;
  void family(const char *name, const char *help, Type type) {
    families.push_back(neutracer::family(name, help,
                                         type == Type::counter ? neutracer::MetricType::counter
                                         : type == Type::gauge ? neutracer::MetricType::gauge
                                                               : neutracer::MetricType::histogram));
  }
  void sample(const Labels &labels, double value) {
    families.back().samples.push_back({labels, value});
  }
  void histogram(const Labels &labels, const std::vector<double> &bounds,
                 const std::vector<std::uint64_t> &counts, double sum, std::uint64_t count) {
    families.back().histograms.push_back({labels, bounds, counts, sum, count});
  }
};

// prometheus-cpp's model: the same series, labels in the same order.
struct PromSink {
  std::vector<prometheus::MetricFamily> families;
  Type current = Type::gauge;
  static std::vector<prometheus::ClientMetric::Label> convert(const Labels &labels) {
    std::vector<prometheus::ClientMetric::Label> out;
    out.reserve(labels.size());
    for (const auto &[k, v] : labels)
      out.push_back({k, v});
    return out;
  }
  void family(const char *name, const char *help, Type type) {
    current = type;
    prometheus::MetricFamily f;
    f.name = name;
    f.help = help;
    f.type = type == Type::counter ? prometheus::MetricType::Counter
             : type == Type::gauge ? prometheus::MetricType::Gauge
                                   : prometheus::MetricType::Histogram;
    families.push_back(std::move(f));
  }
  void sample(const Labels &labels, double value) {
    prometheus::ClientMetric m;
    m.label = convert(labels);
    (current == Type::counter ? m.counter.value : m.gauge.value) = value;
    families.back().metric.push_back(std::move(m));
  }
  void histogram(const Labels &labels, const std::vector<double> &bounds,
                 const std::vector<std::uint64_t> &counts, double sum, std::uint64_t count) {
    prometheus::ClientMetric m;
    m.label = convert(labels);
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < bounds.size(); ++i) {
      cumulative += counts[i];
      m.histogram.bucket.push_back({cumulative, bounds[i]});
    }
    m.histogram.sample_count = count;
    m.histogram.sample_sum = sum;
    families.back().metric.push_back(std::move(m));
  }
};

// prometheus-cpp as it is meant to be used: metric objects kept in a Registry (labels in a
// std::map, so sorted by name), collected into MetricFamily values at each scrape.
struct RegistrySink {
  prometheus::Registry registry;
  Type current = Type::gauge;
  prometheus::Family<prometheus::Counter> *counters = nullptr;
  prometheus::Family<prometheus::Gauge> *gauges = nullptr;
  prometheus::Family<prometheus::Histogram> *histograms = nullptr;
  static prometheus::Labels convert(const Labels &labels) {
    return prometheus::Labels(labels.begin(), labels.end());
  }
  void family(const char *name, const char *help, Type type) {
    current = type;
    if (type == Type::counter)
      counters = &prometheus::BuildCounter().Name(name).Help(help).Register(registry);
    else if (type == Type::gauge)
      gauges = &prometheus::BuildGauge().Name(name).Help(help).Register(registry);
    else
      histograms = &prometheus::BuildHistogram().Name(name).Help(help).Register(registry);
  }
  void sample(const Labels &labels, double value) {
    if (current == Type::counter)
      counters->Add(convert(labels)).Increment(value);
    else
      gauges->Add(convert(labels)).Set(value);
  }
  void histogram(const Labels &labels, const std::vector<double> &bounds,
                 const std::vector<std::uint64_t> &counts, double sum, std::uint64_t count) {
    std::vector<double> increments(counts.begin(), counts.end());
    std::uint64_t below = 0;
    for (auto c : counts)
      below += c;
    increments.push_back(static_cast<double>(count - below)); // the +Inf bucket
    histograms->Add(convert(labels), bounds).ObserveMultiple(increments, sum);
  }
};

// ---- timing ---------------------------------------------------------------------------------

struct Measure {
  double ms = 0;
  std::size_t bytes = 0;
  std::size_t peak_extra = 0;
  std::string text; // kept only when asked
};

template <typename F> Measure measure(F &&work, bool keep) {
  Measure m;
  {
    const std::size_t before = g_live;
    g_peak = g_live;
    const auto t0 = std::chrono::steady_clock::now();
    std::ostringstream out;
    work(out);
    const auto t1 = std::chrono::steady_clock::now();
    m.ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    m.peak_extra = g_peak - before;
    m.bytes = static_cast<std::size_t>(out.tellp());
    if (keep)
      m.text = out.str();
  }
  return m;
}

struct Stat {
  double median, lo, hi;
};
Stat stat(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  const double median = n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
  return {median, xs.front(), xs.back()};
}

std::size_t count_series(const std::string &text) {
  std::size_t lines = 0;
  bool line_start = true;
  for (char c : text) {
    if (line_start && c != '#')
      ++lines;
    line_start = c == '\n';
  }
  return lines;
}

void write_file(const std::string &path, const std::string &text) {
  std::ofstream(path, std::ios::binary) << text;
}

int bench(int procs_n, int rounds, const std::string &outdir) {
  const auto procs = make_procs(procs_n);
  const auto t0 = std::chrono::steady_clock::now();
  OursSink ours;
  generate(procs, ours);
  const auto t1 = std::chrono::steady_clock::now();
  PromSink prom;
  generate(procs, prom);
  const auto t2 = std::chrono::steady_clock::now();
  std::printf("models built once: ours %.0f ms, prometheus-cpp %.0f ms\n",
              std::chrono::duration<double, std::milli>(t1 - t0).count(),
              std::chrono::duration<double, std::milli>(t2 - t1).count());

  RegistrySink reg;
  generate(procs, reg);
  const auto t3 = std::chrono::steady_clock::now();
  std::printf("registry filled once: %.0f ms\n",
              std::chrono::duration<double, std::milli>(t3 - t2).count());

  const auto run_ours = [&](std::ostream &out) { neutracer::render_text(ours.families, out); };
  const prometheus::TextSerializer serializer;
  const auto run_prom = [&](std::ostream &out) { serializer.Serialize(out, prom.families); };
  const auto run_registry = [&](std::ostream &out) {
    serializer.Serialize(out, reg.registry.Collect());
  };
  const auto build_ours = [&](std::ostream &out) {
    OursSink fresh;
    generate(procs, fresh);
    neutracer::render_text(fresh.families, out);
  };
  const auto build_prom = [&](std::ostream &out) {
    PromSink fresh;
    generate(procs, fresh);
    serializer.Serialize(out, fresh.families);
  };

  // One warm-up each (page faults of the first large buffers), then the rounds, alternating
  // which writer goes first.
  measure(run_ours, false);
  measure(run_prom, false);
  std::vector<double> t_ours, t_prom, t_bours, t_bprom, t_reg;
  Measure last_ours, last_prom, last_bours, last_bprom, last_reg;
  std::printf("%-6s %10s %10s %12s %12s %14s\n", "round", "ours", "prom-cpp", "ours+build",
              "prom+build", "prom registry");
  for (int r = 0; r < rounds; ++r) {
    const bool keep = r + 1 == rounds;
    if (r % 2 == 0) {
      last_ours = measure(run_ours, keep);
      last_prom = measure(run_prom, keep);
      last_bours = measure(build_ours, false);
      last_bprom = measure(build_prom, false);
      last_reg = measure(run_registry, keep);
    } else {
      last_reg = measure(run_registry, keep);
      last_prom = measure(run_prom, keep);
      last_ours = measure(run_ours, keep);
      last_bprom = measure(build_prom, false);
      last_bours = measure(build_ours, false);
    }
    t_ours.push_back(last_ours.ms);
    t_prom.push_back(last_prom.ms);
    t_bours.push_back(last_bours.ms);
    t_bprom.push_back(last_bprom.ms);
    t_reg.push_back(last_reg.ms);
    std::printf("%-6d %10.1f %10.1f %12.1f %12.1f %14.1f\n", r + 1, last_ours.ms, last_prom.ms,
                last_bours.ms, last_bprom.ms, last_reg.ms);
  }
  const std::size_t series_ours = count_series(last_ours.text);
  const std::size_t series_prom = count_series(last_prom.text);
  write_file(outdir + "/ours_bench.prom", last_ours.text);
  write_file(outdir + "/prometheus-cpp_bench.prom", last_prom.text);
  write_file(outdir + "/prometheus-cpp-registry_bench.prom", last_reg.text);
  const std::size_t series_reg = count_series(last_reg.text);

  const auto row = [&](const char *what, const std::vector<double> &ts, std::size_t series,
                       const Measure &m) {
    const Stat s = stat(ts);
    std::printf("| %s | %.1f (%.1f–%.1f) | %.0f (%.0f–%.0f) | %zu | %.1f |\n", what, s.median, s.lo,
                s.hi, s.median * 1e6 / static_cast<double>(series),
                s.lo * 1e6 / static_cast<double>(series), s.hi * 1e6 / static_cast<double>(series),
                m.bytes, static_cast<double>(m.peak_extra) / 1048576.0);
  };
  std::printf("\n%d processes, %zu series (ours) / %zu (prometheus-cpp) / %zu (registry), "
              "%d rounds; median (min–max)\n\n",
              procs_n, series_ours, series_prom, series_reg, rounds);
  std::printf("| writer | ms | ns/series | bytes | peak extra MiB |\n|---|---|---|---|---|\n");
  row("ours: render_text", t_ours, series_ours, last_ours);
  row("prometheus-cpp: TextSerializer", t_prom, series_prom, last_prom);
  row("ours: build families + render_text", t_bours, series_ours, last_bours);
  row("prometheus-cpp: build MetricFamily + Serialize", t_bprom, series_prom, last_bprom);
  row("prometheus-cpp: Registry::Collect + Serialize", t_reg, series_reg, last_reg);
  const double ours_median = stat(t_ours).median;
  std::printf("\nprometheus-cpp / ours, medians: serialising %.2fx, building + serialising "
              "%.2fx, Collect + Serialize against render_text %.2fx\n",
              stat(t_prom).median / ours_median, stat(t_bprom).median / stat(t_bours).median,
              stat(t_reg).median / ours_median);
  return series_ours == series_prom && series_ours == series_reg ? 0 : 1;
}

// ---- edge cases for promtool ----------------------------------------------------------------

struct Case {
  const char *file;
  const char *help;
  Labels labels;
  std::vector<double> values;
};

int cases(const std::string &outdir) {
  const std::vector<Case> all = {
      {"help_newline", "First line\nsecond line.", {}, {1}},
      {"help_backslash", "Files under C:\\tmp are counted.", {}, {1}},
      {"label_invalid_utf8",
       "comm holding bytes that are not UTF-8.",
       {{"pid", "4242"}, {"comm", std::string("py\xff\xfe-\xc3(x")}},
       {1}},
      {"label_quote_newline_backslash",
       "A label value with a quote, a newline and a backslash.",
       {{"kernel", "say \"hi\"\nC:\\tmp\\"}},
       {1}},
      {"values", "Assorted values.", {}, {1e-9, 0.1, 12345678.9, 3e20, NAN, INFINITY}},
  };
  for (const auto &c : all) {
    neutracer::MetricFamily ours =
        neutracer::family(std::string("case_") + c.file, c.help, neutracer::MetricType::gauge);
    prometheus::MetricFamily prom;
    prom.name = ours.name;
    prom.help = c.help;
    prom.type = prometheus::MetricType::Gauge;
    int i = 0;
    for (double value : c.values) {
      Labels labels = c.labels;
      if (c.values.size() > 1)
        labels.emplace_back("i", std::to_string(i++));
      ours.samples.push_back({labels, value});
      prometheus::ClientMetric m;
      m.label = PromSink::convert(labels);
      m.gauge.value = value;
      prom.metric.push_back(std::move(m));
    }
    std::ostringstream a, b;
    neutracer::render_text({ours}, a);
    prometheus::TextSerializer().Serialize(b, {prom});
    write_file(outdir + "/ours_" + c.file + ".prom", a.str());
    write_file(outdir + "/prometheus-cpp_" + c.file + ".prom", b.str());
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "bench" && argc == 5)
    return bench(std::atoi(argv[2]), std::max(1, std::atoi(argv[3])), argv[4]);
  if (mode == "cases" && argc == 3)
    return cases(argv[2]);
  std::fprintf(stderr, "usage: %s bench PROCS ROUNDS OUTDIR | cases OUTDIR\n", argv[0]);
  return 2;
}
