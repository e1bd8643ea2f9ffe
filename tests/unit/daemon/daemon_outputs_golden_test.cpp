// SPDX-License-Identifier: Apache-2.0
// Everything one daemon publishes after two scans of a fixture host (/metrics text and the
// /api/v1 documents), compared with tests/fixtures/golden/daemon_outputs.txt, and each
// collector's series with tests/fixtures/golden/collectors/<name>.prom. It pins the
// outputs across changes to how the loop is put together: a diff of that file shows exactly what
// a change added or lost. Families are sorted by name and values that depend on time are masked.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "call_event.h"
#include "exposition/text_sink.h"
#include "fake_cuda_tracing.h"
#include "golden_file.h"
#include "http/content_encoding.h"
#include "nccl_event.h"
#include "nvml/nvml_library.h"
#include "temp_proc.h"
#include "test_daemon.h"

namespace neutracer {
namespace {

// Families whose values are times or durations measured while the test runs.
bool time_dependent(const std::string &family) {
  static const std::set<std::string> kFamilies = {
      "neutracer_scan_duration_seconds", "neutracer_collector_duration_seconds",
      "neutracer_cuda_sync_in_progress_seconds",
      "neutracer_cuda_memcpy_throughput_bytes_per_second",
      "neutracer_nccl_seconds_since_last_collective"};
  return kFamilies.contains(family);
}

// The /metrics text with its families sorted by name and time-dependent values masked.
std::string normalized_metrics(const std::string &text) {
  std::map<std::string, std::string> families;
  std::istringstream lines(text);
  std::string line, name;
  while (std::getline(lines, line)) {
    if (line.starts_with("# HELP ")) {
      name = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_FALSE(families.contains(name)) << name << " written twice";
    } else if (!line.starts_with("#") && time_dependent(name)) {
      line = line.substr(0, line.rfind(' ')) + " <time>";
    } else if (line.starts_with("neutracer_build_info{")) { // of this tree and machine
      line = std::regex_replace(line, std::regex("(revision|compiler|libbpf)=\"[^\"]*\""),
                                "$1=\"<build>\"");
    }
    families[name] += line + "\n";
  }
  std::string out;
  for (const auto &[family, block] : families)
    out += block;
  return out;
}

// A JSON document with the values of time-dependent keys masked, pretty-printed.
std::string normalized_json(const std::string &text) {
  auto document = nlohmann::json::parse(text);
  const std::set<std::string> kTimes = {"time",    "since",      "started",   "updated",   "at",
                                        "time_ns", "first_seen", "last_seen", "start_time"};
  std::function<void(nlohmann::json &)> mask = [&](nlohmann::json &value) {
    if (value.is_object()) {
      for (auto &[key, item] : value.items())
        if (kTimes.contains(key) && !item.is_structured())
          item = "<time>";
        else
          mask(item);
    } else if (value.is_array()) {
      for (auto &item : value)
        mask(item);
    }
  };
  mask(document);
  return document.dump(1) + "\n";
}

// Two scans of a host with two CUDA processes (one in a Docker container), call stacks on, a
// stand-in NVML with two GPUs and a stand-in kernel log that reports an Xid for one process.
class FixtureHost : public ::testing::Test {
protected:
  FixtureHost() {
    proc_.copy_scenario("shared_library");
    tracing_.depth = 8;
    tracing_.stacks[3] = {0x1234, 0x5678};
    const std::uint64_t ns_per_tick = 1'000'000'000ull / sysconf(_SC_CLK_TCK);
    const std::uint64_t start_100 = 123456 * ns_per_tick, start_200 = 234567 * ns_per_tick;
    auto kept = test::call_event(NT_API_MEM_ALLOC, 100, start_100, {0, 1 << 20}, {0x7e00000});
    kept.stack_id = 3;
    auto failed = test::call_event(NT_API_MEM_ALLOC, 100, start_100, {0, 1ull << 40}, {}, 2);
    failed.stack_id = 3;
    tracing_.events = {kept, failed,
                       test::call_event(NT_API_MEMCPY_HTOD, 200, start_200, {0x7e00000, 0, 4096}),
                       test::call_event(NT_API_STREAM_SYNCHRONIZE, 200, start_200, {0})};
    // Processes 100 and 200 are ranks 0 and 1 of one communicator; rank 0 called one more
    // all-reduce than rank 1, long ago: a collective hang.
    for (const auto &[pid, start, handle, rank] :
         {std::tuple{100u, start_100, 0xc100ull, 0}, std::tuple{200u, start_200, 0xc200ull, 1}}) {
      auto init = test::nccl_init(handle, 0x5eed, rank, 2);
      init.tgid = pid;
      init.call.proc_start_ns = start;
      tracing_.nccl_events.push_back(init);
      for (int k = 0; k < 3 - rank; ++k) {
        auto call = test::nccl_call(NT_NCCL_ALL_REDUCE, handle, 1024, 7,
                                    1'000'000'000ull * static_cast<std::uint64_t>(k + 1));
        call.tgid = pid;
        call.call.proc_start_ns = start;
        call.call.stack_id = NT_NO_STACK;
        tracing_.nccl_events.push_back(call);
      }
    }
    tracing_.launches = {{100, start_100, NT_API_LAUNCH_KERNEL, 0xabc, 42, 0},
                         {200, start_200, NT_API_GRAPH_LAUNCH, 0xdef, 3, 0}};
    std::ofstream(proc_.root() / "kmsg") << "4,1,100,-;NVRM: Xid (PCI:0000:65:00): 79, old\n";
    config_.proc_root = proc_.root().string();
    config_.alerts.journal = false;
    config_.gpu_health.kmsg_path = (proc_.root() / "kmsg").string();
    config_.kubernetes.log_dir = (proc_.root() / "no-pods").string();
    nvml_ = open_nvml(NEUTRACER_FAKE_NVML);
  }

  // The daemon after its two scans.
  test::TestDaemon &run() {
    daemon_.emplace(config_, tracing_, publisher_, notifier_, nullptr, nvml_.get());
    daemon_->scan_once();
    tracing_.launches[0].count = 50;
    std::ofstream(proc_.root() / "kmsg", std::ios::app)
        << "4,2,200,-;NVRM: Xid (PCI:0000:17:00): 31, pid=100, name=python3, Ch 00000008\n";
    daemon_->scan_once();
    return *daemon_;
  }

  TempProc proc_;
  test::FakeTracing tracing_;
  Config config_;
  std::unique_ptr<NvmlApi> nvml_;
  MetricsPublisher publisher_;
  ServiceNotifier notifier_;
  std::optional<test::TestDaemon> daemon_;
};

TEST_F(FixtureHost, EverythingPublishedMatchesTheGolden) {
  run();
  const auto snapshot = publisher_.latest();
  std::string outputs =
      "== /metrics\n" + normalized_metrics(inflate_text(*snapshot->metrics_deflated));
  outputs += "== /api/v1/kernels\n" + normalized_json(gunzip(*snapshot->kernels_json_gzip));
  outputs += "== /api/v1/processes\n" + normalized_json(gunzip(*snapshot->processes_json_gzip));
  outputs += "== /api/v1/alerts\n" + normalized_json(snapshot->alerts_json);
  test::expect_matches_golden(std::string(NEUTRACER_FIXTURES_DIR) + "/golden/daemon_outputs.txt",
                              outputs);
}

// Each collector's own series, in tests/fixtures/golden/collectors/<name>.prom.
TEST_F(FixtureHost, EachCollectorsSeriesMatchItsGolden) {
  auto &daemon = run();
  std::set<std::string> names;
  for (auto *collector : daemon.collectors.in_order()) {
    std::string text;
    TextSink sink(text);
    collector->write(sink);
    const std::string name(collector->name());
    EXPECT_TRUE(names.insert(name).second) << name << " listed twice";
    EXPECT_FALSE(text.empty()) << name << " wrote nothing";
    test::expect_matches_golden(std::string(NEUTRACER_FIXTURES_DIR) + "/golden/collectors/" + name +
                                    ".prom",
                                normalized_metrics(text));
  }
  EXPECT_EQ(names.size(), 9u);
}

} // namespace
} // namespace neutracer
