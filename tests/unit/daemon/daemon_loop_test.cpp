// SPDX-License-Identifier: Apache-2.0
// A whole scan -> publish cycle of DaemonLoop without root: a fixture /proc tree, a fake BPF side
// (CudaTracing) and the real state, detectors and exporters.
#include "test_daemon.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <sstream>
#include <sys/sysmacros.h>
#include <thread>
#include <unistd.h>
#include <utility>

#include "call_event.h"
#include "daemon/signals.h"
#include "descriptors_exhausted.h"
#include "fake_cuda_tracing.h"
#include "http/content_encoding.h"
#include "temp_proc.h"

namespace neutracer {
namespace {

// The shared_library fixture: pids 100 and 200 map one libcuda file.
const LibraryId kLibrary{makedev(0xfd, 0x01), 1835423};
constexpr std::uint64_t kStartTicksOf100 = 123456;
constexpr std::uint64_t kStartTicksOf200 = 234567;

// The value of the first sample of `family` in the snapshot's /metrics text that carries every
// label of `labels` (plain values: no escapes), or -1.
double sample(const PublishedSnapshot &snapshot, const std::string &family,
              const std::map<std::string, std::string> &labels) {
  std::istringstream text(inflate_text(*snapshot.metrics_deflated));
  std::string line;
  while (std::getline(text, line)) {
    if (!line.starts_with(family + "{") && !line.starts_with(family + " "))
      continue;
    const auto end_of_labels = line.rfind(' ');
    const std::string series = line.substr(0, end_of_labels);
    const bool all = std::all_of(labels.begin(), labels.end(), [&](const auto &label) {
      const std::string wanted = label.first + "=\"" + label.second + "\"";
      return series.find("{" + wanted) != std::string::npos ||
             series.find("," + wanted) != std::string::npos;
    });
    if (all)
      return std::stod(line.substr(end_of_labels + 1));
  }
  return -1;
}

class DaemonLoopTest : public ::testing::Test {
protected:
  DaemonLoopTest() { proc_.copy_scenario("shared_library"); }
  Config config(LaunchCounting launch_counting) const {
    Config c;
    c.proc_root = proc_.root().string();
    c.cuda.launch_counting = launch_counting;
    c.alerts.journal = false;
    c.gpu_health.read_kernel_log = false; // never the host's /dev/kmsg in unit tests
    return c;
  }
  TempProc proc_;
  test::FakeTracing tracing_;
  MetricsPublisher publisher_;
  ServiceNotifier notifier_;
};

TEST_F(DaemonLoopTest, OneScanAttachesOncePerFileAndPublishesLaunchesPerProcess) {
  const std::uint64_t start_ns = kStartTicksOf100 * (1'000'000'000ull / sysconf(_SC_CLK_TCK));
  tracing_.launches = {{100, start_ns, NT_API_LAUNCH_KERNEL, 0xabc, 42, 0}};
  test::TestDaemon loop(config(LaunchCounting::exact), tracing_, publisher_, notifier_);
  loop.scan_once();
  loop.scan_once();

  EXPECT_EQ(tracing_.attach_calls, 1); // two processes, one file, two scans
  const auto snapshot = publisher_.latest();
  ASSERT_TRUE(snapshot && snapshot->from_a_scan);
  EXPECT_EQ(sample(*snapshot, "neutracer_cuda_kernel_launches_total",
                   {{"pid", "100"}, {"comm", "python3"}, {"kernel", "[unresolved]"}}),
            42);
  EXPECT_EQ(sample(*snapshot, "neutracer_cuda_processes", {}), 2);
  EXPECT_EQ(sample(*snapshot, "neutracer_cuda_launch_counting_info", {{"mode", "exact"}}), 1);
  EXPECT_EQ(sample(*snapshot, "neutracer_cuda_launch_sampling_ratio", {{"pid", "200"}}), 1);
  EXPECT_TRUE(tracing_.launch_probes.empty()) << "exact mode attaches launch probes per file";
}

TEST_F(DaemonLoopTest, TheKernelsDocumentIsRebuiltOnlyWhenItChanges) {
  const std::uint64_t start_ns = kStartTicksOf100 * (1'000'000'000ull / sysconf(_SC_CLK_TCK));
  tracing_.launches = {{100, start_ns, NT_API_LAUNCH_KERNEL, 0xabc, 42, 0}};
  test::TestDaemon loop(config(LaunchCounting::exact), tracing_, publisher_, notifier_);
  loop.scan_once();
  const auto first = publisher_.latest()->kernels_json_gzip;
  ASSERT_NE(gunzip(*first).find("\"launches\": 42"), std::string::npos) << gunzip(*first);
  loop.scan_once(); // idle: the same document, not a copy built again
  EXPECT_EQ(publisher_.latest()->kernels_json_gzip, first);
  tracing_.launches[0].count = 43;
  loop.scan_once();
  EXPECT_NE(publisher_.latest()->kernels_json_gzip, first);
  EXPECT_NE(gunzip(*publisher_.latest()->kernels_json_gzip).find("\"launches\": 43"),
            std::string::npos);
  // The name bound is published with the rest.
  EXPECT_EQ(sample(*publisher_.latest(), "neutracer_cuda_kernel_names_dropped_total", {}), 0);
  EXPECT_EQ(sample(*publisher_.latest(), "neutracer_cuda_kernel_name_budget_bytes", {}),
            static_cast<double>(kDefaultKernelNameBytes));
}

TEST_F(DaemonLoopTest, TheDaemonNeverTracesItself) {
  // Once NVML is loaded the daemon maps libcuda too.
  const int self = static_cast<int>(::getpid());
  proc_.write(self, "maps",
              "7f3a1c000000-7f3a1c200000 r-xp 00000000 fd:01 1835423"
              "                    /usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05\n");
  proc_.write_stat(self, "neutracerd", 999);
  tracing_.per_process = true;
  test::TestDaemon loop(config(LaunchCounting::adaptive), tracing_, publisher_, notifier_);
  loop.scan_once();
  EXPECT_EQ(sample(*publisher_.latest(), "neutracer_cuda_processes", {}), 2);
  EXPECT_FALSE(tracing_.launch_probes.contains(self));
  EXPECT_TRUE(tracing_.launch_probes.contains(100));
}

TEST_F(DaemonLoopTest, AProcessThatGoesTakesItsSentKernelFunctionsWithIt) {
  // The BPF side sends each cuKernelGetFunction pair once per (pid, start); a process that exits
  // or execs must be forgotten there too, or a new image handed the same handles stays unnamed.
  const std::uint64_t ns_per_tick = 1'000'000'000ull / sysconf(_SC_CLK_TCK);
  const std::uint64_t start_100 = kStartTicksOf100 * ns_per_tick;
  const std::uint64_t start_200 = kStartTicksOf200 * ns_per_tick;
  tracing_.kernel_functions = {{100, start_100}, {200, start_200}};
  tracing_.launches = {{100, start_100, NT_API_LAUNCH_KERNEL, 0xabc, 0, 1},
                       {200, start_200, NT_API_LAUNCH_KERNEL, 0xabc, 0, 1}};
  test::TestDaemon loop(config(LaunchCounting::exact), tracing_, publisher_, notifier_);
  loop.scan_once();
  EXPECT_EQ(tracing_.kernel_functions.size(), 2u);
  std::filesystem::remove_all(proc_.root() / "100");
  loop.scan_once();
  EXPECT_EQ(tracing_.kernel_functions,
            (std::set<std::pair<std::uint32_t, std::uint64_t>>{{200, start_200}}));
}

using DaemonLoopDeathTest = DaemonLoopTest;

TEST_F(DaemonLoopDeathTest, RunLogsSighupKeepsScanningAndStopsOnSigterm) {
  // main's wiring, in a child process: SIGHUP used to end the daemon silently (issue 20).
  EXPECT_EXIT(
      {
        spdlog::set_default_logger(spdlog::stderr_logger_st("daemon_loop_test"));
        install_signal_handlers();
        Config c = config(LaunchCounting::exact);
        c.scan_interval = std::chrono::milliseconds(100);
        test::TestDaemon loop(c, tracing_, publisher_, notifier_);
        std::thread sender([] {
          std::this_thread::sleep_for(std::chrono::milliseconds(150));
          ::kill(::getpid(), SIGHUP);
          std::this_thread::sleep_for(std::chrono::milliseconds(400));
          ::kill(::getpid(), SIGTERM);
        });
        loop.loop.run(stop_requested(), [] { report_hangups(); });
        sender.join();
        std::exit(publisher_.latest()->from_a_scan ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "SIGHUP ignored \\(received 1\\)");
}

TEST_F(DaemonLoopTest, AdaptiveModeGivesEachProcessItsOwnOpenLaunchProbes) {
  tracing_.per_process = true;
  test::TestDaemon loop(config(LaunchCounting::adaptive), tracing_, publisher_, notifier_);
  loop.scan_once();

  ASSERT_EQ(tracing_.launch_probes.size(), 2u);
  EXPECT_EQ(tracing_.launch_probes.at(100), std::vector<LibraryId>{kLibrary});
  EXPECT_EQ(tracing_.launch_probes.at(200), std::vector<LibraryId>{kLibrary});
  EXPECT_TRUE(tracing_.gates.at(100) && tracing_.gates.at(200));
  const auto snapshot = publisher_.latest();
  EXPECT_EQ(sample(*snapshot, "neutracer_cuda_launch_counting_info", {{"mode", "adaptive"}}), 1);
}

TEST_F(DaemonLoopTest, ExactModeProbesTheNamingCallPerProcessWhileNamesAreMissing) {
  tracing_.per_process_names = true;
  const std::uint64_t ns_per_tick = 1'000'000'000ull / sysconf(_SC_CLK_TCK);
  test::TestDaemon loop(config(LaunchCounting::exact), tracing_, publisher_, notifier_);
  loop.scan_once();
  // Neither has launched yet: both may name kernels.
  ASSERT_EQ(tracing_.launch_probes.size(), 2u);
  EXPECT_TRUE(tracing_.name_calls.at(100) && tracing_.name_calls.at(200));
  EXPECT_TRUE(tracing_.gates.empty()) << "launches are counted system-wide: no gate";

  // 100 launches a handle it has no name for; 200 only a graph (nothing to name).
  tracing_.launches = {{100, kStartTicksOf100 * ns_per_tick, NT_API_LAUNCH_KERNEL, 0xabc, 42, 0},
                       {200, kStartTicksOf200 * ns_per_tick, NT_API_GRAPH_LAUNCH, 0xdef, 3, 0}};
  loop.scan_once(); // the counts are read after the probes are updated
  loop.scan_once();
  EXPECT_TRUE(tracing_.launch_probes.contains(100));
  EXPECT_FALSE(tracing_.launch_probes.contains(200));
  EXPECT_EQ(
      sample(*publisher_.latest(), "neutracer_cuda_launch_counting_info", {{"mode", "exact"}}), 1);
}

TEST_F(DaemonLoopTest, ARuleThatSamplesOneProcessLeavesTheOthersExact) {
  tracing_.per_process = true; // main.cpp asks for per-process probes when a rule samples
  auto c = config(LaunchCounting::exact);
  c.cuda.launch_rules = {{"python3", LaunchCounting::adaptive}};
  test::TestDaemon loop(c, tracing_, publisher_, notifier_);
  loop.scan_once();
  ASSERT_EQ(tracing_.launch_probes.size(), 2u); // both counted from the start
  const auto snapshot = publisher_.latest();
  EXPECT_EQ(sample(*snapshot, "neutracer_cuda_launch_counting_info", {{"mode", "exact"}}), 1);
  EXPECT_EQ(sample(*snapshot, "neutracer_cuda_launch_estimate_relative_error", {{"pid", "100"}}),
            0);
}

TEST_F(DaemonLoopTest, AdaptiveModeFallsBackToExactWhereTheTracerCannot) {
  tracing_.per_process = false; // e.g. a kernel without uprobe_multi links
  test::TestDaemon loop(config(LaunchCounting::adaptive), tracing_, publisher_, notifier_);
  loop.scan_once();
  EXPECT_TRUE(tracing_.launch_probes.empty());
  EXPECT_EQ(
      sample(*publisher_.latest(), "neutracer_cuda_launch_counting_info", {{"mode", "exact"}}), 1);
}

// Issue 20: out of descriptors, every /proc open failed and the scan took the live processes
// for exited ones (false "exited holding" lines, state wiped, probes detached).
TEST_F(DaemonLoopTest, FdLimitViaPrlimitKeepsLiveProcessesAndNamesTheLimit) {
  const std::uint64_t start_ns = kStartTicksOf100 * (1'000'000'000ull / sysconf(_SC_CLK_TCK));
  tracing_.launches = {{100, start_ns, NT_API_LAUNCH_KERNEL, 0xabc, 42, 0}};
  tracing_.events = {test::call_event(NT_API_MEM_ALLOC, 100, start_ns, {0, 1 << 20}, {0x7e00000})};
  tracing_.per_process = true;
  test::TestDaemon loop(config(LaunchCounting::adaptive), tracing_, publisher_, notifier_);
  loop.scan_once();
  ASSERT_EQ(sample(*publisher_.latest(), "neutracer_cuda_processes", {}), 2);
  ASSERT_EQ(sample(*publisher_.latest(), "neutracer_cuda_memory_used_bytes",
                   {{"pid", "100"}, {"kind", "device"}}),
            1 << 20);

  std::ostringstream log;
  const auto previous_logger = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "fd_limit_test", std::make_shared<spdlog::sinks::ostream_sink_st>(log)));
  rlim_t soft = 0, hard = 0;
  {
    const DescriptorsExhausted exhausted;
    soft = exhausted.soft_limit();
    hard = exhausted.hard_limit();
    // More scans than a library may stay unused before it is detached.
    for (int scan = 0; scan < 12; ++scan)
      loop.scan_once();
  }
  spdlog::set_default_logger(previous_logger);

  const auto snapshot = publisher_.latest();
  EXPECT_EQ(sample(*snapshot, "neutracer_cuda_processes", {}), 2);
  EXPECT_EQ(sample(*snapshot, "neutracer_cuda_kernel_launches_total",
                   {{"pid", "100"}, {"comm", "python3"}, {"kernel", "[unresolved]"}}),
            42);
  EXPECT_EQ(sample(*snapshot, "neutracer_cuda_launch_sampling_ratio", {{"pid", "200"}}), 1);
  EXPECT_EQ(sample(*snapshot, "neutracer_scan_errors_total", {{"reason", "fd_limit"}}), 12);
  EXPECT_EQ(
      sample(*snapshot, "neutracer_cuda_memory_used_bytes", {{"pid", "100"}, {"kind", "device"}}),
      1 << 20);
  EXPECT_EQ(sample(*snapshot, "neutracer_cuda_exits_holding_memory_total", {}), 0);
  EXPECT_TRUE(tracing_.is_attached(kLibrary)) << "detached a library that is still mapped";
  EXPECT_TRUE(tracing_.launch_probes.contains(100) && tracing_.launch_probes.contains(200));
  const auto text = log.str();
  const std::string limit =
      "RLIMIT_NOFILE soft " + std::to_string(soft) + ", hard " +
      (hard == RLIM_INFINITY ? std::string("unlimited") : std::to_string(hard));
  EXPECT_NE(text.find(limit), std::string::npos) << text;
  EXPECT_NE(text.find("LimitNOFILE"), std::string::npos) << text;
  EXPECT_EQ(text.find("exited holding"), std::string::npos) << text;
  // One error for twelve scans: rate-limited.
  std::size_t errors = 0;
  for (auto at = text.find("out of file descriptors"); at != std::string::npos;
       at = text.find("out of file descriptors", at + 1))
    ++errors;
  EXPECT_EQ(errors, 1u) << text;

  // Descriptors back: the next scan is complete and counts nothing new.
  loop.scan_once();
  EXPECT_EQ(sample(*publisher_.latest(), "neutracer_scan_errors_total", {{"reason", "fd_limit"}}),
            12);
  EXPECT_EQ(sample(*publisher_.latest(), "neutracer_cuda_processes", {}), 2);
}

// Issue 33: out of descriptors, a traced process that exits is still noticed (its /proc folder
// is gone, which takes no descriptor to see): its state and per-process probes go, so their
// descriptors come back; the one still running is kept. The end of the condition is logged.
TEST_F(DaemonLoopTest, FdLimitStillSeesExitsAndLogsWhenDescriptorsAreBack) {
  tracing_.per_process = true;
  test::TestDaemon loop(config(LaunchCounting::adaptive), tracing_, publisher_, notifier_);
  loop.scan_once();
  ASSERT_EQ(sample(*publisher_.latest(), "neutracer_cuda_processes", {}), 2);
  ASSERT_TRUE(tracing_.launch_probes.contains(200));

  std::ostringstream log;
  const auto previous_logger = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "fd_limit_test", std::make_shared<spdlog::sinks::ostream_sink_st>(log)));
  std::filesystem::remove_all(proc_.root() / "200"); // pid 200 exits
  {
    const DescriptorsExhausted exhausted;
    loop.scan_once();
    loop.scan_once();
  }
  const auto snapshot = publisher_.latest();
  EXPECT_EQ(sample(*snapshot, "neutracer_scan_errors_total", {{"reason", "fd_limit"}}), 2);
  EXPECT_EQ(sample(*snapshot, "neutracer_cuda_processes", {}), 1);
  EXPECT_FALSE(tracing_.launch_probes.contains(200)) << "the exited process's links stay";
  EXPECT_TRUE(tracing_.launch_probes.contains(100)) << "a live process not read was dropped";
  loop.scan_once();
  spdlog::set_default_logger(previous_logger);
  const auto text = log.str();
  EXPECT_NE(text.find("1 traced processes were seen to exit"), std::string::npos) << text;
  EXPECT_NE(text.find("file descriptors available again after 2 scans"), std::string::npos) << text;
}

} // namespace
} // namespace neutracer

namespace neutracer {
namespace {

class RecordingJournal : public JournalWriter {
public:
  bool write(const JournalEntry &entry) override {
    entries.push_back(entry);
    return true;
  }
  std::vector<JournalEntry> entries;
};

TEST_F(DaemonLoopTest, CallSitesArePublishedAndNamedInAlerts) {
  const std::uint64_t start_ns = kStartTicksOf100 * (1'000'000'000ull / sysconf(_SC_CLK_TCK));
  tracing_.depth = 8;
  tracing_.stacks[3] = {0x1234, 0x5678};
  auto kept = test::call_event(NT_API_MEM_ALLOC, 100, start_ns, {0, 1 << 20}, {0x7e00000});
  kept.stack_id = 3;
  auto failed = test::call_event(NT_API_MEM_ALLOC, 100, start_ns, {0, 1ull << 40}, {}, 2);
  failed.stack_id = 3;
  tracing_.events = {kept, failed};
  RecordingJournal journal;
  Config c = config(LaunchCounting::exact);
  c.alerts.journal = true;
  test::TestDaemon loop(c, tracing_, publisher_, notifier_, &journal);
  loop.scan_once();

  const auto snapshot = publisher_.latest();
  EXPECT_EQ(snapshot->stacks.max_depth, 8u);
  const ProcessId id{100, kStartTicksOf100};
  ASSERT_TRUE(snapshot->sites->contains(id));
  const auto &sites = snapshot->sites->at(id)->sites;
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].counts.live_bytes, 1u << 20);
  EXPECT_EQ(sites[0].counts.failed_allocations, 1u);
  // The fixture's process has no such code mapped: bare addresses, said to be so.
  ASSERT_TRUE(sites[0].stack);
  EXPECT_EQ(sites[0].stack->frames.at(0).address, 0x1234u);
  EXPECT_EQ(sample(*snapshot, "neutracer_call_sites", {}), 1);
  EXPECT_EQ(sample(*snapshot, "neutracer_python_stacks_rejected_total", {}), 0);
  // The OOM's journal entry names where it came from.
  const auto oom = std::find_if(journal.entries.begin(), journal.entries.end(), [](const auto &e) {
    return e.message_id == "300aaf922eb2453baeec2d829451f171";
  });
  ASSERT_NE(oom, journal.entries.end());
  std::map<std::string, std::string> fields(oom->fields.begin(), oom->fields.end());
  EXPECT_EQ(fields.at("TARGET_CODE_LOCATION"), "0x1234");
  EXPECT_NE(oom->message.find(" at 0x1234"), std::string::npos) << oom->message;
}

// An exec keeps the PID and start time: the old program's memory is said to go with an exec,
// not an exit (issue 33).
TEST_F(DaemonLoopTest, AnExecIsToldApartFromAnExit) {
  const std::uint64_t start_ns = kStartTicksOf100 * (1'000'000'000ull / sysconf(_SC_CLK_TCK));
  tracing_.events = {test::call_event(NT_API_MEM_ALLOC, 100, start_ns, {0, 1 << 20}, {0x7e00000})};
  RecordingJournal journal;
  Config c = config(LaunchCounting::exact);
  c.alerts.journal = true;
  test::TestDaemon loop(c, tracing_, publisher_, notifier_, &journal);
  loop.scan_once();
  // The image the daemon holds open reads empty once it is gone; the stat stays (same process).
  std::ofstream(proc_.root() / "100" / "maps", std::ios::trunc).flush();
  loop.scan_once();
  const auto exit = std::find_if(journal.entries.begin(), journal.entries.end(), [](const auto &e) {
    return e.message_id == "52f525da51814e438c19d93e726f2bcd";
  });
  ASSERT_NE(exit, journal.entries.end());
  EXPECT_NE(exit->message.find("python3 (pid 100) exec'd a new program holding 1048576 bytes"),
            std::string::npos)
      << exit->message;
  std::map<std::string, std::string> fields(exit->fields.begin(), exit->fields.end());
  EXPECT_EQ(fields.at("REPLACED"), "1");

  // Gone altogether: an exit.
  std::filesystem::remove_all(proc_.root() / "200");
  tracing_.events = {test::call_event(NT_API_MEM_ALLOC, 200,
                                      kStartTicksOf200 * (1'000'000'000ull / sysconf(_SC_CLK_TCK)),
                                      {0, 4096}, {0x9e00000})};
  loop.scan_once();
  loop.scan_once();
  ASSERT_EQ(journal.entries.back().message_id, "52f525da51814e438c19d93e726f2bcd");
  EXPECT_NE(journal.entries.back().message.find("(pid 200) exited holding"), std::string::npos)
      << journal.entries.back().message;
}

TEST_F(DaemonLoopTest, StacksOffInTheConfigRecordNoSites) {
  tracing_.depth = 8;
  Config c = config(LaunchCounting::exact);
  c.stacks.enabled = false;
  test::TestDaemon loop(c, tracing_, publisher_, notifier_);
  loop.scan_once();
  EXPECT_TRUE(publisher_.latest()->sites->empty());
  EXPECT_FALSE(publisher_.latest()->stacks.enabled);
}

} // namespace
} // namespace neutracer
