// SPDX-License-Identifier: Apache-2.0
// The real daemon out of file descriptors (issue 20): its RLIMIT_NOFILE lowered with prlimit
// below the descriptors it holds, for more scans than a library may stay unused. Every scan
// then fails to open /proc; none may take the traced process for an exited one.
#include <filesystem>
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

} // namespace
} // namespace neutracer::test
