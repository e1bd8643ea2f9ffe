// SPDX-License-Identifier: Apache-2.0
// End to end, as root: the real daemon attaches its BPF probes to the stand-in libcuda.so.1,
// the scenario program makes CUDA calls with known counts, and /metrics must show them exactly.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <memory>
#include <sstream>
#include <unistd.h>

#include "e2e_fixture.h"

namespace neutracer::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class TracingE2E : public DaemonE2E {};

TEST_F(TracingE2E, CountsLaunchesPerKernelName) {
  auto scenario = run_scenario({}, {"launch:_Z16vectorAdd_kernelPKfS0_Pfi:1000",
                                    "launch_ptsz:_Z16vectorAdd_kernelPKfS0_Pfi:200",
                                    "launchex:my_kernel_ex:500", "launchex_ptsz:my_kernel_ex:5",
                                    "launch_kernel_handle:by_kernel_handle:300",
                                    "coop:cooperative:50", "graph:7"});
  const auto s = scrape();
  const auto launches = [&](const std::string &kernel) {
    return value(s, "neutracer_cuda_kernel_launches_total", labels(scenario, "kernel", kernel));
  };
  EXPECT_EQ(launches("vectorAdd_kernel"), 1200);
  EXPECT_EQ(launches("my_kernel_ex"), 505);
  EXPECT_EQ(launches("by_kernel_handle"), 300);
  EXPECT_EQ(launches("cooperative"), 50);
  EXPECT_EQ(launches("[cuda_graph]"), 7);
  EXPECT_EQ(launches("[unresolved]"), -1) << "every handle was named after attach";

  const auto kernels = http_get(port_, "/api/v1/kernels");
  ASSERT_TRUE(kernels && kernels->status == 200);
  EXPECT_NE(kernels->body.find("vectorAdd_kernel(float const*, float const*, float*, int)"),
            std::string::npos)
      << kernels->body;
  finish(scenario);
}

TEST_F(TracingE2E, AttachesToARunningProcessAndLeavesEarlierKernelsUnresolved) {
  // "early" is looked up and launched before the daemon attaches; the program keeps its handle,
  // so the launches after attach are counted under [unresolved]. "late" is named after attach.
  auto scenario = run_scenario({"launch:early:10", "alloc:4096:1"},
                               {"relaunch:90", "launch:late:40", "free:1"});
  const auto s = scrape();
  EXPECT_EQ(
      value(s, "neutracer_cuda_kernel_launches_total", labels(scenario, "kernel", "[unresolved]")),
      90);
  EXPECT_EQ(value(s, "neutracer_cuda_kernel_launches_total", labels(scenario, "kernel", "late")),
            40);
  // The free of a pre-attach allocation is counted apart and never drives memory negative.
  EXPECT_EQ(value(s, "neutracer_cuda_memory_unknown_frees_total",
                  {{"pid", scenario.pid}, {"comm", kComm}}),
            1);
  EXPECT_EQ(value(s, "neutracer_cuda_memory_used_bytes", labels(scenario, "kind", "device")), 0);
  finish(scenario);
}

TEST_F(TracingE2E, TracksMemoryByKind) {
  auto scenario = run_scenario({}, {"alloc:1048576:3", "free:1", "alloc_async:4096:2",
                                    "alloc_managed:8192:1", "host_alloc:65536:1",
                                    "vmm_create:2097152:2", "free:1", "alloc_pitch:1000:10:1"});
  const auto s = scrape();
  const auto memory = [&](const std::string &metric, const std::string &kind) {
    return value(s, "neutracer_cuda_memory_" + metric, labels(scenario, "kind", kind));
  };
  // device: 3 x 1 MiB (one freed), 2 x 4 KiB async, one pitched 1024 x 10.
  EXPECT_EQ(memory("used_bytes", "device"), 2 * 1048576 + 2 * 4096 + 10240);
  EXPECT_EQ(memory("peak_bytes", "device"), 3 * 1048576);
  EXPECT_EQ(memory("allocations_total", "device"), 6);
  EXPECT_EQ(memory("frees_total", "device"), 1);
  EXPECT_EQ(memory("allocated_bytes_total", "device"), 3 * 1048576 + 2 * 4096 + 10240);
  EXPECT_EQ(memory("freed_bytes_total", "device"), 1048576);
  EXPECT_EQ(memory("used_bytes", "managed"), 8192);
  EXPECT_EQ(memory("used_bytes", "host_pinned"), 65536);
  EXPECT_EQ(memory("allocations_total", "vmm"), 2);
  EXPECT_EQ(memory("frees_total", "vmm"), 1);
  EXPECT_EQ(memory("used_bytes", "vmm"), 2097152);
  EXPECT_EQ(memory("peak_bytes", "vmm"), 2 * 2097152);
  finish(scenario);
}

TEST_F(TracingE2E, CountsCopiedBytesPerDirection) {
  auto scenario = run_scenario({}, {"h2d:4096:10", "d2h:100:5", "d2d:512:3", "h2d_async:1000:2",
                                    "d2h_async:10:1", "d2d_async:64:4", "memcpy_default:256:6",
                                    "peer:128:2", "copy2d:100:4:3", "copy3d:10:2:3:2"});
  const auto s = scrape();
  const auto bytes = [&](const std::string &direction) {
    return value(s, "neutracer_cuda_memcpy_bytes_total", labels(scenario, "direction", direction));
  };
  const auto calls = [&](const std::string &direction) {
    return value(s, "neutracer_cuda_memcpy_calls_total", labels(scenario, "direction", direction));
  };
  EXPECT_EQ(bytes("h2d"), 10 * 4096 + 2 * 1000 + 3 * 100 * 4);
  EXPECT_EQ(calls("h2d"), 10 + 2 + 3);
  EXPECT_EQ(bytes("d2h"), 5 * 100 + 1 * 10 + 2 * 10 * 2 * 3);
  EXPECT_EQ(calls("d2h"), 5 + 1 + 2);
  // cuMemcpy between two allocations the daemon saw is classified device to device.
  EXPECT_EQ(bytes("d2d"), 3 * 512 + 4 * 64 + 6 * 256);
  EXPECT_EQ(calls("d2d"), 3 + 4 + 6);
  EXPECT_EQ(bytes("peer"), 2 * 128);
  EXPECT_EQ(bytes("default"), -1); // never copied that way: no series (-1: absent)
  EXPECT_GT(value(s, "neutracer_cuda_memcpy_throughput_bytes_per_second",
                  labels(scenario, "direction", "h2d")),
            0);
  finish(scenario);
}

TEST_F(TracingE2E, CountsErrorsPerApiAndCode) {
  auto scenario = run_scenario({}, {"oom:4000000000", "free_bad", "copy_bad:16:3"});
  const auto s = scrape();
  const auto errors = [&](const std::string &api, const std::string &error) {
    return value(s, "neutracer_cuda_api_errors_total",
                 {{"pid", scenario.pid}, {"comm", kComm}, {"api", api}, {"error", error}});
  };
  EXPECT_EQ(errors("cuMemAlloc_v2", "CUDA_ERROR_OUT_OF_MEMORY"), 1);
  EXPECT_EQ(errors("cuMemFree_v2", "CUDA_ERROR_INVALID_VALUE"), 1);
  EXPECT_EQ(errors("cuMemcpyHtoD_v2", "CUDA_ERROR_INVALID_VALUE"), 3);
  // Failed calls change nothing else: no copy counted, so no copy series at all (-1: absent).
  EXPECT_EQ(value(s, "neutracer_cuda_memcpy_bytes_total", labels(scenario, "direction", "h2d")),
            -1);
  finish(scenario);
}

TEST_F(TracingE2E, MeasuresSyncWaitsAndShowsAWaitInProgress) {
  auto scenario = run_scenario({}, {"sync:300", "ctx_sync:50"});
  auto s = scrape();
  const double waited = value(s, "neutracer_cuda_sync_wait_seconds_total",
                              labels(scenario, "api", "cuStreamSynchronize"));
  EXPECT_GE(waited, 0.295);
  EXPECT_LT(waited, 1.0);
  EXPECT_EQ(value(s, "neutracer_cuda_sync_wait_duration_seconds_count",
                  labels(scenario, "api", "cuStreamSynchronize")),
            1);
  EXPECT_EQ(
      value(
          s, "neutracer_cuda_sync_wait_duration_seconds_bucket",
          {{"pid", scenario.pid}, {"comm", kComm}, {"api", "cuStreamSynchronize"}, {"le", "0.1"}}),
      0);
  EXPECT_EQ(
      value(
          s, "neutracer_cuda_sync_wait_duration_seconds_bucket",
          {{"pid", scenario.pid}, {"comm", kComm}, {"api", "cuStreamSynchronize"}, {"le", "0.5"}}),
      1);
  EXPECT_GE(value(s, "neutracer_cuda_sync_wait_seconds_total",
                  labels(scenario, "api", "cuCtxSynchronize")),
            0.045);
  EXPECT_EQ(value(s, "neutracer_cuda_sync_in_progress_seconds",
                  labels(scenario, "api", "cuStreamSynchronize")),
            0);
  finish(scenario);

  // A long wait is visible while it lasts.
  auto stuck = run_scenario({}, {"ready"});
  std::ofstream(stuck.exit).put('\n');
  stuck.process->wait_exit(10s);
  auto waiting = std::make_unique<ChildProcess>(
      std::vector<std::string>{NEUTRACER_SCENARIO_PATH, "ready", "sync:2500"},
      (dir_ / "stuck.err").string());
  const auto ready = waiting->wait_for_line("ready ", 10s);
  ASSERT_TRUE(ready);
  const std::string pid = ready->substr(6);
  EXPECT_TRUE(eventually(
      [&] {
        return value(scrape(), "neutracer_cuda_sync_in_progress_seconds",
                     {{"pid", pid}, {"comm", kComm}, {"api", "cuStreamSynchronize"}}) > 0.5;
      },
      5s))
      << "a 2.5 s wait never showed as in progress";
  const auto status = waiting->wait_exit(10s);
  ASSERT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
}

TEST_F(TracingE2E, SeriesVanishAfterExitAndProbesDetach) {
  auto scenario = run_scenario({}, {"launch:k:3", "alloc:4096:1"});
  EXPECT_GE(scrape()["neutracer_attached_libraries"], 1);
  EXPECT_GT(scrape()["neutracer_attached_probes"], 100);
  EXPECT_EQ(log().find(standin_detach_line()), std::string::npos);
  // The stand-in's entries start with push %rbp: the daemon checked and said so at attach.
  std::istringstream lines(log());
  int emulated = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.find(standin_library()) != std::string::npos &&
        (line.find("cuLaunchKernel starts with push %rbp, which the kernel emulates") !=
             std::string::npos ||
         line.find("cuKernelGetFunction starts with push %rbp, which the kernel emulates") !=
             std::string::npos))
      ++emulated;
  EXPECT_EQ(emulated, 2) << log();
  finish(scenario);
  const std::string pid_label = "pid=\"" + scenario.pid + "\"";
  EXPECT_TRUE(eventually(
      [&] {
        for (const auto &[key, v] : scrape())
          if (key.find(pid_label) != std::string::npos)
            return false;
        return true;
      },
      2s))
      << "series of pid " << scenario.pid << " still exported after exit";
  // No process maps the library any more: probes go after the grace period (10 scans). Other
  // stand-ins on the host may keep their own libraries attached, or this one while they run
  // this build's scenario: only our library is judged, once nothing maps it.
  EXPECT_TRUE(eventually(
      [&] {
        return log().find(standin_detach_line()) != std::string::npos || standin_library_mapped();
      },
      5s))
      << standin_detach_line() << " not in the log: " << log();
}

TEST_F(TracingE2E, SighupIsLoggedAndTheDaemonKeepsServing) {
  // SIGHUP used to end the daemon at once, silently (issue 20). TearDown then checks that
  // SIGTERM still stops it cleanly.
  ASSERT_EQ(::kill(daemon_->pid(), SIGHUP), 0);
  EXPECT_TRUE(eventually([&] { return log().find("SIGHUP ignored") != std::string::npos; }, 5s))
      << log();
  wait_scans(2);
  const auto health = http_get(port_, "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST_F(TracingE2E, SelfMetricsArePresentFromTheFirstScrapeAndLintClean) {
  const auto reply = http_get(port_, "/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_NE(reply->headers.find("Content-Type: text/plain; version=0.0.4; charset=utf-8"),
            std::string::npos);
  const auto s = parse_scrape(reply->body);
  for (const auto *name : {"neutracer_cuda_processes", "neutracer_attached_libraries",
                           "neutracer_probe_attach_errors_total", "neutracer_scan_duration_seconds",
                           "process_resident_memory_bytes", "process_cpu_seconds_total"})
    EXPECT_TRUE(s.contains(name)) << name;
  // Present from the start; their values count every process on the host, not only ours.
  EXPECT_TRUE(s.contains("neutracer_events_dropped_total{source=\"ring_buffer\"}"));
  EXPECT_TRUE(s.contains("neutracer_bpf_map_update_errors_total{map=\"launches\"}"));
  // version, then the git revision, the compiler and the libbpf the daemon runs with.
  bool build_info = false;
  for (const auto &[series_text, value] : s)
    if (series_text.starts_with("neutracer_build_info{version=\"" NEUTRACER_VERSION
                                "\",revision=\"") &&
        series_text.find("\",compiler=\"") != std::string::npos &&
        series_text.find("\",libbpf=\"v") != std::string::npos && value == 1)
      build_info = true;
  EXPECT_TRUE(build_info);

  // promtool lints a scrape that has every family populated.
  auto scenario =
      run_scenario({}, {"launch:k:1", "alloc:4096:1", "h2d:16:1", "sync:1", "oom:4000000000"});
  const auto full = http_get(port_, "/metrics");
  ASSERT_TRUE(full);
  const auto file = dir_ / "scrape.prom";
  std::ofstream(file) << full->body;
  const std::string command = "promtool check metrics < " + file.string() + " 2>&1";
  FILE *pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof buffer, pipe))
    output += buffer;
  const int status = ::pclose(pipe);
  EXPECT_EQ(status, 0) << "promtool failed (is the prometheus package installed?): " << output;
  EXPECT_EQ(output, "");
  finish(scenario);
}

TEST_F(TracingE2E, ServesIndexHealthAndRejectsBadRequests) {
  const auto index = http_get(port_, "/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_NE(index->body.find("href=\"/metrics\""), std::string::npos);
  const auto missing = http_get(port_, "/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

} // namespace
} // namespace neutracer::test
