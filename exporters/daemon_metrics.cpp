// SPDX-License-Identifier: Apache-2.0
#include "exporters/daemon_metrics.h"

namespace neutracer {

void write_daemon_metrics(const DaemonBuild &build, const LoopStatus &status, MetricSink &sink) {
  sink.family("neutracer_build_info",
              "Version, git revision, compiler and libbpf of neutracerd; always 1.",
              MetricType::gauge);
  sink.sample({{"version", build.version},
               {"revision", build.revision},
               {"compiler", build.compiler},
               {"libbpf", build.libbpf}},
              1);
  sink.family("neutracer_scan_duration_seconds", "Duration of the last /proc scan and map refresh.",
              MetricType::gauge);
  sink.sample({}, status.scan_seconds);
  sink.family("neutracer_scans_total", "/proc scans completed.", MetricType::counter);
  sink.sample({}, static_cast<double>(status.scans));
  sink.family("neutracer_collector_up",
              "1 while the data source works, 0 while it does not (the daemon's log says "
              "why): cuda_tracer (the driver probes), os_tracer (BPF scheduler, block and "
              "network programs), nvml (NVML loaded and initialised), kernel_log (Xid "
              "reports read), nvml_process_utilization (a GPU answered NVML's per-process "
              "utilization query; no series while NVML is down or where no GPU supports "
              "it). A source turned off in the config has no series.",
              MetricType::gauge);
  for (const auto &source : status.sources)
    sink.sample({{"collector", source.name}}, source.up ? 1.0 : 0.0);
  const auto per_collector = [&](const char *name, const char *help, auto value) {
    sink.family(name, help, MetricType::gauge);
    for (const auto &run : status.collectors)
      sink.sample({{"collector", run.name}}, value(run));
  };
  per_collector("neutracer_collector_success",
                "1 if the collector's last scan succeeded: it finished and its source answered "
                "(the daemon's log says why not). A collector turned off in the config has no "
                "series.",
                [](const CollectorRun &run) { return run.success ? 1.0 : 0.0; });
  per_collector("neutracer_collector_duration_seconds",
                "Time the collector's last scan and the writing of its series took.",
                [](const CollectorRun &run) { return run.seconds; });
}

} // namespace neutracer
