// SPDX-License-Identifier: Apache-2.0
#include "exporters/cuda_metrics.h"

#include <functional>

#include "exporters/metric_builders.h"

namespace neutracer {
namespace {

constexpr std::array kMemoryKindsInOrder = {MemoryKind::device, MemoryKind::managed,
                                            MemoryKind::host_pinned, MemoryKind::vmm};
constexpr std::array kDirectionsInOrder = {CopyDirection::h2d, CopyDirection::d2h,
                                           CopyDirection::d2d, CopyDirection::peer,
                                           CopyDirection::default_};

// A traced process and its labels, built once for all of its series.
struct ProcessRow {
  const ProcessState &state;
  Labels labels;
};

std::vector<ProcessRow> process_rows(const CudaState &state) {
  std::vector<ProcessRow> rows;
  rows.reserve(state.processes().size());
  for (const auto &[id, process] : state.processes())
    rows.push_back({process, process_labels(id, process.comm, process.container)});
  return rows;
}

// Each GPU a process used, with its counters; a process that used none yet shows the device
// it would use, so its series exist from discovery on.
template <typename Fn> void for_each_device(const ProcessState &process, Fn &&fn) {
  if (process.devices.empty()) {
    const DeviceCounters none;
    fn(process.gpu_label(process.device_of(0)), none);
    return;
  }
  for (const auto &[device, counters] : process.devices)
    fn(process.gpu_label(device), counters);
}

// A memory kind says something once the process allocated or freed that kind of memory;
// `device` is always shown (0 bytes on a GPU is worth seeing).
bool shows_memory_kind(MemoryKind kind, const MemoryCounters &counters) {
  return kind == MemoryKind::device || counters.allocations > 0 || counters.frees > 0 ||
         counters.used_bytes > 0;
}

bool copied_in(const DeviceCounters &counters, std::size_t direction) {
  return counters.copies[direction] > 0 || counters.copy_bytes[direction] > 0;
}

// A family with a sample per process, GPU and memory kind used: one of the memory counters.
struct MemoryKindFamily {
  std::string_view name;
  std::string_view help;
  MetricType type;
  std::uint64_t MemoryCounters::*counter;
};

constexpr std::array<MemoryKindFamily, 6> kMemoryKindFamilies{{
    {"neutracer_cuda_memory_used_bytes",
     "CUDA memory allocated through the driver and not yet freed.", MetricType::gauge,
     &MemoryCounters::used_bytes},
    {"neutracer_cuda_memory_peak_bytes", "Highest value of neutracer_cuda_memory_used_bytes seen.",
     MetricType::gauge, &MemoryCounters::peak_bytes},
    {"neutracer_cuda_memory_allocations_total", "Successful CUDA allocations.", MetricType::counter,
     &MemoryCounters::allocations},
    {"neutracer_cuda_memory_frees_total", "Frees of allocations neutracerd saw being made.",
     MetricType::counter, &MemoryCounters::frees},
    {"neutracer_cuda_memory_allocated_bytes_total",
     "Bytes allocated by successful CUDA allocations.", MetricType::counter,
     &MemoryCounters::allocated_bytes},
    {"neutracer_cuda_memory_freed_bytes_total",
     "Bytes released by frees of allocations neutracerd saw.", MetricType::counter,
     &MemoryCounters::freed_bytes},
}};

void per_memory_kind(const std::vector<ProcessRow> &rows, MetricSink &sink,
                     const MemoryKindFamily &family) {
  sink.family(family.name, family.help, family.type);
  for (const auto &row : rows)
    for_each_device(row.state, [&](const std::string &gpu, const DeviceCounters &counters) {
      for (const auto kind : kMemoryKindsInOrder) {
        const auto &memory = counters.memory[static_cast<std::size_t>(kind)];
        if (shows_memory_kind(kind, memory))
          sink.sample(row.labels, {{"gpu", gpu}, {"kind", memory_kind_name(kind)}},
                      static_cast<double>(memory.*family.counter));
      }
    });
}

// One family with a sample per process, GPU and copy direction seen there.
void per_device_direction(const std::vector<ProcessRow> &rows, MetricSink &sink,
                          std::string_view name, std::string_view help, MetricType type,
                          const std::function<double(const DeviceCounters &, std::size_t)> &value) {
  sink.family(name, help, type);
  for (const auto &row : rows)
    for_each_device(row.state, [&](const std::string &gpu, const DeviceCounters &counters) {
      for (const auto direction : kDirectionsInOrder)
        if (copied_in(counters, static_cast<std::size_t>(direction)))
          sink.sample(row.labels, {{"gpu", gpu}, {"direction", copy_direction_name(direction)}},
                      value(counters, static_cast<std::size_t>(direction)));
    });
}

void per_direction(const std::vector<ProcessRow> &rows, MetricSink &sink, std::string_view name,
                   std::string_view help, MetricType type,
                   const std::function<double(const ProcessState &, std::size_t)> &value) {
  sink.family(name, help, type);
  for (const auto &row : rows)
    for (const auto direction : kDirectionsInOrder) {
      const auto index = static_cast<std::size_t>(direction);
      if (row.state.copies[index] > 0 || row.state.copy_bytes[index] > 0)
        sink.sample(row.labels, {{"direction", copy_direction_name(direction)}},
                    value(row.state, index));
    }
}

} // namespace

std::vector<MetricFamily> tracer_families(const TracerHealth &health) {
  std::vector<MetricFamily> out;
  const auto gauge = [&](std::string name, std::string help, double value) {
    auto f = family(std::move(name), std::move(help), MetricType::gauge);
    f.samples.push_back({{}, value});
    out.push_back(std::move(f));
  };
  const auto counter = [&](std::string name, std::string help, double value) {
    auto f = family(std::move(name), std::move(help), MetricType::counter);
    f.samples.push_back({{}, value});
    out.push_back(std::move(f));
  };
  gauge("neutracer_cuda_processes", "Processes that map the CUDA driver library.",
        static_cast<double>(health.cuda_processes));
  gauge("neutracer_attached_libraries", "Distinct CUDA driver library files with probes attached.",
        static_cast<double>(health.attached_libraries));
  gauge("neutracer_attached_probes", "Uprobes and uretprobes currently attached.",
        static_cast<double>(health.attached_probes));
  gauge("neutracer_probe_symbols_missing",
        "Probed driver symbols absent from the attached libraries (older drivers).",
        static_cast<double>(health.missing_symbols));
  gauge("neutracer_probe_entries_single_stepped",
        "Probed launch and cuKernelGetFunction entries, over the driver files attached, whose "
        "first instruction the kernel single-steps instead of emulating: each call there "
        "costs a second trap (the daemon's log names them).",
        static_cast<double>(health.single_stepped_hot_entries));
  counter("neutracer_probe_attach_errors_total", "Probe attachments that failed.",
          static_cast<double>(health.attach_errors));
  auto dropped = family("neutracer_events_dropped_total",
                        "Events lost: ring buffer full in the kernel, or rejected as malformed.",
                        MetricType::counter);
  dropped.samples.push_back(
      {{{"source", "ring_buffer"}}, static_cast<double>(health.ring_buffer_drops)});
  dropped.samples.push_back(
      {{{"source", "malformed"}}, static_cast<double>(health.malformed_events)});
  out.push_back(std::move(dropped));
  counter("neutracer_stacks_lost_total",
          "Call stacks the kernel did not store (another stack held their slot of the stack "
          "map); their calls count at a no_stack site.",
          static_cast<double>(health.stacks_lost));
  gauge("neutracer_discovery_unreadable_processes",
        "Processes whose memory maps could not be read in the last scan (exited or hidden).",
        static_cast<double>(health.unreadable_processes));
  auto scan_errors = family("neutracer_scan_errors_total",
                            "Scans left incomplete; fd_limit: out of file descriptors, processes "
                            "not read were kept as they were.",
                            MetricType::counter);
  scan_errors.samples.push_back(
      {{{"reason", "fd_limit"}}, static_cast<double>(health.fd_limit_scans)});
  out.push_back(std::move(scan_errors));
  return out;
}

void write_cuda_metrics(const CudaState &state, const SeriesSettings &settings, MetricSink &sink) {
  const auto rows = process_rows(state);

  // Exact counts and estimates in two families: a sum over one family is all of one kind.
  const auto launch_family = [&](bool estimated) {
    for (const auto &row : rows) {
      if (row.state.launches_estimated != estimated)
        continue;
      for (const auto &[label, series] : row.state.kernels)
        for (const auto &[device, count] : series.launches_by_device)
          sink.sample(row.labels, {{"gpu", row.state.gpu_label(device)}, {"kernel", label}},
                      static_cast<double>(count));
    }
  };
  sink.family("neutracer_cuda_kernel_launches_total",
              "CUDA kernel launches by kernel name (demangled, shortened) and GPU, counted "
              "one by one (processes whose launches are sampled are in "
              "neutracer_cuda_kernel_launches_estimated_total instead).",
              MetricType::counter);
  launch_family(false);
  sink.family("neutracer_cuda_kernel_launches_estimated_total",
              "Estimated CUDA kernel launches of processes whose launches are sampled "
              "(cuda.launch_counting adaptive): scaled from counting windows, with the 95 % "
              "relative error bound in neutracer_cuda_launch_estimate_relative_error.",
              MetricType::counter);
  launch_family(true);

  for (const auto &family : kMemoryKindFamilies)
    per_memory_kind(rows, sink, family);
  sink.family("neutracer_cuda_memory_unknown_frees_total",
              "Frees of memory allocated before neutracerd attached (size unknown).",
              MetricType::counter);
  for (const auto &row : rows)
    sink.sample(row.labels, double(row.state.unknown_frees));

  per_device_direction(
      rows, sink, "neutracer_cuda_memcpy_bytes_total",
      "Bytes copied by CUDA memcpy calls, by GPU (the calling thread's current device) and "
      "direction.",
      MetricType::counter,
      [](const DeviceCounters &d, std::size_t i) { return double(d.copy_bytes[i]); });
  per_device_direction(rows, sink, "neutracer_cuda_memcpy_calls_total",
                       "Successful CUDA memcpy calls, by GPU and direction.", MetricType::counter,
                       [](const DeviceCounters &d, std::size_t i) { return double(d.copies[i]); });
  per_direction(rows, sink, "neutracer_cuda_memcpy_throughput_bytes_per_second",
                "Copy throughput, exponentially smoothed over cuda.throughput_window.",
                MetricType::gauge,
                [](const ProcessState &p, std::size_t i) { return p.copy_throughput[i]; });

  sink.family("neutracer_cuda_sync_wait_seconds_total",
              "Seconds spent in CUDA synchronisation calls that returned.", MetricType::counter);
  for (const auto &row : rows)
    for (const auto &[api, sync] : row.state.syncs)
      sink.sample(row.labels, {{"api", api_name(api)}}, sync.wait_seconds);
  sink.family("neutracer_cuda_sync_wait_duration_seconds",
              "Durations of CUDA synchronisation calls.", MetricType::histogram);
  if (settings.process_histograms)
    for (const auto &row : rows)
      for (const auto &[api, sync] : row.state.syncs)
        sink.histogram(row.labels, {{"api", api_name(api)}},
                       {kSyncWaitBuckets, sync.buckets, sync.wait_seconds, sync.waits});
  sink.family("neutracer_cuda_sync_in_progress_seconds",
              "Age of the longest synchronisation call still waiting (0 if none).",
              MetricType::gauge);
  for (const auto &row : rows)
    for (const auto &[api, sync] : row.state.syncs)
      sink.sample(row.labels, {{"api", api_name(api)}}, sync.in_progress_seconds);

  sink.family("neutracer_cuda_api_errors_total",
              "CUDA driver calls that returned an error, by API and CUresult.",
              MetricType::counter);
  for (const auto &row : rows)
    for (const auto &[key, count] : row.state.errors)
      sink.sample(row.labels, {{"api", api_name(key.first)}, {"error", cu_result_name(key.second)}},
                  double(count));
}

std::vector<MetricFamily> cuda_families(const CudaState &state, const SeriesSettings &settings) {
  FamilySink sink;
  write_cuda_metrics(state, settings, sink);
  return sink.take();
}

} // namespace neutracer
