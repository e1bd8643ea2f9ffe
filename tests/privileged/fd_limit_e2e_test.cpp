// SPDX-License-Identifier: Apache-2.0
// The real daemon out of file descriptors (issue 20): its RLIMIT_NOFILE lowered with prlimit
// below the descriptors it holds, for more scans than a library may stay unused. Every scan
// then fails to open /proc; none may take the traced process for an exited one.
#include <atomic>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>

#include "e2e_fixture.h"

namespace neutracer::test {
namespace {

class FdLimitE2E : public DaemonE2E {};

TEST_F(FdLimitE2E, FdLimitViaPrlimitIsReportedAndTakesNoProcessForExited) {
  auto scenario = run_scenario({}, {"alloc:1048576:1"});
  const auto held = labels(scenario, "kind", "device");
  ASSERT_EQ(value(scrape(), "neutracer_cuda_memory_used_bytes", held), 1048576);

  const pid_t daemon = daemon_->pid();
  rlimit saved{};
  ASSERT_EQ(::prlimit(daemon, RLIMIT_NOFILE, nullptr, &saved), 0);
  // A soft limit of 0: every new descriptor fails, whatever the daemon closes meanwhile. (The
  // lowest free descriptor raced with a scrape's socket or a scan's /proc file closing just
  // after it was measured: a lower number came free and opens went on working.)
  rlimit lowered = saved;
  lowered.rlim_cur = 0;
  ASSERT_EQ(::prlimit(daemon, RLIMIT_NOFILE, &lowered, nullptr), 0);
  std::this_thread::sleep_for(2500ms); // ~25 scans; a library goes after 10 unused ones
  ASSERT_EQ(::prlimit(daemon, RLIMIT_NOFILE, &saved, nullptr), 0);
  wait_scans(2);

  const auto s = scrape();
  EXPECT_GT(value(s, "neutracer_scan_errors_total", {{"reason", "fd_limit"}}), 0) << log();
  EXPECT_EQ(value(s, "neutracer_cuda_memory_used_bytes", held), 1048576) << "state wiped";
  const auto text = log();
  EXPECT_EQ(text.find("(pid " + scenario.pid + ") exited"), std::string::npos) << text;
  EXPECT_NE(text.find("RLIMIT_NOFILE soft " + std::to_string(lowered.rlim_cur)), std::string::npos)
      << text;
  // Other libraries on a shared test host may go; the stand-in this test maps must not.
  struct stat library {};
  ASSERT_EQ(
      ::stat((fs::path(NEUTRACER_SCENARIO_PATH).parent_path() / "libcuda.so.1").c_str(), &library),
      0);
  EXPECT_EQ(text.find("inode=" + std::to_string(library.st_ino) + ": no process maps it"),
            std::string::npos)
      << text;
  finish(scenario);
}

// Issue 33: the daemon at its limit with many traced processes (adaptive counting: ~4 links and
// a maps file each) keeps answering /healthz and /metrics, and once they exit it notices, closes
// their links and is back to the descriptors it held before they came.
class FdLimitRecoveryE2E : public DaemonE2E {
protected:
  std::string config_yaml() const override { return "cuda: {launch_counting: adaptive}\n"; }
};

std::size_t open_descriptors(pid_t pid) {
  std::error_code error;
  const fs::directory_iterator fds("/proc/" + std::to_string(pid) + "/fd", error);
  return error ? 0 : static_cast<std::size_t>(std::distance(fds, fs::directory_iterator()));
}

TEST_F(FdLimitRecoveryE2E, ExitedProcessesGiveDescriptorsBackAndHealthzAnswersThroughout) {
  constexpr int kProcesses = 60;
  // One process stays throughout: the driver file's own probes are part of the idle count.
  auto resident = run_scenario({}, {"alloc:4096:1"});
  wait_scans(3);
  const pid_t daemon = daemon_->pid();
  const auto idle = open_descriptors(daemon);
  rlimit saved{};
  ASSERT_EQ(::prlimit(daemon, RLIMIT_NOFILE, nullptr, &saved), 0);
  // Room for the reserve and about a third of the processes' ~5 descriptors each (new ones
  // take the lowest free numbers; those held above the limit stay).
  rlimit lowered = saved;
  lowered.rlim_cur = static_cast<rlim_t>(idle) + 32 + 5 * kProcesses / 3;
  ASSERT_EQ(::prlimit(daemon, RLIMIT_NOFILE, &lowered, nullptr), 0);

  std::atomic<int> asked{0}, answered{0};
  std::jthread health([&](std::stop_token stop) {
    while (!stop.stop_requested()) {
      const auto reply = http_get(port_, "/healthz"); // gives up after 5 s
      ++asked;
      answered += reply && reply->status == 200;
      std::this_thread::sleep_for(50ms);
    }
  });
  const auto exit_file = dir_ / "exit-all";
  std::vector<std::unique_ptr<ChildProcess>> processes;
  for (int i = 0; i < kProcesses; ++i) {
    processes.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{NEUTRACER_SCENARIO_PATH, "ready", "alloc:4096:1",
                                 "wait:" + exit_file.string()},
        (dir_ / "many.err").string()));
    ASSERT_TRUE(processes.back()->wait_for_line("waiting ", 10s));
  }
  // At the limit: scans say so, and /metrics answers with it.
  ASSERT_TRUE(eventually(
      [&] {
        return value(scrape(), "neutracer_scan_errors_total", {{"reason", "fd_limit"}}) > 0;
      },
      20s))
      << log();
  wait_scans(2);

  std::ofstream(exit_file).put('\n');
  for (auto &process : processes)
    ASSERT_TRUE(process->wait_exit(10s));
  const double exited_at = scrape()["neutracer_scans_total"];
  // Every exit is noticed within 2 scans: no process of ours but the resident one is traced.
  wait_scans(2);
  const auto traced = scrape();
  for (const auto &process : processes)
    EXPECT_EQ(value(traced, "neutracer_cuda_memory_used_bytes",
                    {{"pid", std::to_string(process->pid())}}),
              -1)
        << "pid " << process->pid() << " still traced";
  // Their links close in the background (RCU waits); others' stand-ins on a shared host may add
  // a few descriptors.
  EXPECT_TRUE(eventually([&] { return open_descriptors(daemon) <= idle + 8; }, 30s))
      << "idle " << idle << ", now " << open_descriptors(daemon);
  const double back_at = scrape()["neutracer_scans_total"];
  health.request_stop();
  health.join();
  EXPECT_GT(asked.load(), 10);
  EXPECT_EQ(answered.load(), asked.load()) << "/healthz went unanswered at the limit";
  const auto text = log();
  EXPECT_NE(text.find("not attached until descriptors free up"), std::string::npos) << text;
  EXPECT_NE(text.find("file descriptors available again"), std::string::npos) << text;
  std::cerr << "descriptors: idle " << idle << ", limit " << lowered.rlim_cur << "; back to idle "
            << back_at - exited_at << " scans after the exits\n";
  ASSERT_EQ(::prlimit(daemon, RLIMIT_NOFILE, &saved, nullptr), 0);
  finish(resident);
}

} // namespace
} // namespace neutracer::test
