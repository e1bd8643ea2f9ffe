// SPDX-License-Identifier: Apache-2.0
// neutracerd: composition root. Parses flags and config, builds the parts, maps failures to
// exit codes (see docs/operations.md, "Exit codes"), and runs the loop until SIGTERM/SIGINT
// (daemon/signals.h).
#include <algorithm>
#include <iostream>
#include <malloc.h>
#include <memory>
#include <optional>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "common/journal_writer.h"
#include "config/cli.h"
#include "cuda/cuda_tracer.h"
#include "daemon/daemon_collectors.h"
#include "daemon/daemon_loop.h"
#include "daemon/http_routes.h"
#include "daemon/service_notifier.h"
#include "daemon/signals.h"
#include "daemon/tracing_preflight.h"
#include "exporters/metrics_publisher.h"
#include "http/http_rejections.h"
#include "http/http_request_counts.h"
#include "http/http_server.h"
#include "logging/logger_setup.h"
#include "nvml/nvml_library.h"
#include "os/os_tracer.h"
#include "version.h"

namespace {

constexpr int kExitRuntimeError = 1;
constexpr int kExitConfigError = 2;
constexpr int kExitNoPrivilege = 3;
constexpr int kExitUnsupportedKernel = 4;

} // namespace

int main(int argc, char **argv) {
  using namespace neutracer;
  // glibc gives threads their own heaps (up to 8 per CPU), each keeping what it freed. A scrape
  // of 1 000 processes builds megabytes on whichever of the server's workers took it, so with
  // many workers RSS grew by a scrape per heap (BENCHMARKS.md, "The daemon's own cost").
  mallopt(M_ARENA_MAX, 2);
  // Megabyte buffers (the rendered /metrics text each scan, each scrape's body and its gzip)
  // come from mmap and go back at free. glibc otherwise raises this threshold to the size of the
  // first such buffer freed, and keeps every later one in its heaps.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  const auto cli = parse_cli(argc, argv);
  if (cli.error) {
    report_startup_error(*cli.error);
    return kExitConfigError;
  }
  if (cli.options->help) {
    std::cout << usage_text();
    return 0;
  }
  if (cli.options->version) {
    std::cout << "neutracerd " << kVersion << "\n";
    return 0;
  }
  const auto loaded = load_effective_config(*cli.options, read_text_file);
  if (loaded.error) {
    report_startup_error(loaded.error->what);
    return kExitConfigError;
  }
  const Config config = *loaded.config;
  if (cli.options->check_config) {
    for (const auto &warning : config_warnings(config))
      std::cout << "neutracerd: warning: " << warning << "\n";
    std::cout << "neutracerd: configuration is valid\n";
    return 0;
  }

  const auto log_destination = install_logger(
      parse_log_format(config.log_format).value_or(LogFormat::logfmt), config.log_level);
  for (const auto &warning : config_warnings(config))
    spdlog::warn("configuration: {}", warning);

  install_signal_handlers();

  ServiceNotifier notifier;
  MetricsPublisher publisher;
  try {
    // A host that cannot trace stops here, with the reason and its exit code.
    require_kernel_btf();
    require_uprobe_permission();
    CudaTracer tracer(cuda_tracer_settings(config));
    // OS metrics are secondary: without their BPF programs the daemon still serves CUDA
    // metrics and the /proc-based OS figures.
    std::unique_ptr<OsTracer> os_tracer;
    try {
      OsTracerSettings os_settings;
      os_settings.ticks_per_second = sysconf(_SC_CLK_TCK);
      os_tracer = std::make_unique<OsTracer>(os_settings);
    } catch (const TracerError &error) {
      spdlog::error("OS metrics from BPF disabled: {}", error.what());
    }
    SystemJournalWriter system_journal;
    // GPU device metrics are optional too: NVML is loaded only if installed.
    const auto nvml = config.nvml.enabled ? open_nvml(config.nvml.library) : nullptr;
    DaemonCollectors collectors(config,
                                {.cuda = tracer,
                                 .os = os_tracer.get(),
                                 .nvml = config.nvml.enabled,
                                 .nvml_api = nvml.get(),
                                 .journal = config.alerts.journal ? &system_journal : nullptr});
    DaemonLoop loop(config.scan_interval, collectors.in_order(), collectors.cuda(), publisher,
                    notifier);

    HttpServerOptions web;
    web.listen = config.listen;
    web.max_concurrent_requests = config.web.max_concurrent_requests;
    web.max_connections = config.web.max_connections;
    web.basic_auth_users = config.web.basic_auth_users;
    web.public_paths = {"/healthz"}; // for probes without credentials; docs/operations.md says why
    web.rejections = std::make_shared<HttpRejectionCounters>();
    web.requests = std::make_shared<HttpRequestCounts>();
    const DaemonActions actions{.open_allocator_view = [&collectors](int pid) {
      return collectors.allocator().request(pid);
    }};
    HttpServer server(web,
                      daemon_routes(publisher, config, *web.rejections, *web.requests, actions));
    loop.scan_once();
    spdlog::info("neutracerd {} listening on http://{}/metrics, scanning {} every {} ms, "
                 "logging to {}",
                 kVersion, config.listen, config.proc_root, config.scan_interval.count(),
                 log_destination == LogDestination::journal ? "the journal" : "stderr");
    notifier.ready("serving metrics on " + config.listen);
    loop.run(stop_requested(), [] { report_hangups(); });
    notifier.stopping();
    spdlog::info("stopping: detaching probes");
  } catch (const TracerError &error) {
    spdlog::error("{}", error.what());
    return error.reason == TracerError::Reason::permission    ? kExitNoPrivilege
           : error.reason == TracerError::Reason::unsupported ? kExitUnsupportedKernel
                                                              : kExitRuntimeError;
  } catch (const HttpError &error) {
    spdlog::error("{}", error.what());
    return kExitConfigError;
  } catch (const std::exception &error) {
    spdlog::error("fatal: {}", error.what());
    return kExitRuntimeError;
  }
  return 0;
}
