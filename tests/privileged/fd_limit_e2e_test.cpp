// The real daemon out of file descriptors (issue 20): its RLIMIT_NOFILE lowered with prlimit
// below the descriptors it holds, for more scans than a library may stay unused. Every scan
// then fails to open /proc; none may take the traced process for an exited one.
#include <charconv>
#include <filesystem>
#include <set>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>

#include "e2e_fixture.h"

namespace neutracer::test {
namespace {

class FdLimitE2E : public DaemonE2E {};

// The lowest descriptor number `pid` does not use: with the soft limit there, every open fails.
int lowest_free_descriptor(pid_t pid) {
  std::set<int> used;
  for (const auto &entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    const auto name = entry.path().filename().string();
    int fd = 0;
    std::from_chars(name.data(), name.data() + name.size(), fd);
    used.insert(fd);
  }
  int lowest = 0;
  while (used.contains(lowest))
    ++lowest;
  return lowest;
}

TEST_F(FdLimitE2E, FdLimitViaPrlimitIsReportedAndTakesNoProcessForExited) {
  auto scenario = run_scenario({}, {"alloc:1048576:1"});
  const auto held = labels(scenario, "kind", "device");
  ASSERT_EQ(value(scrape(), "neutracer_cuda_memory_used_bytes", held), 1048576);

  const pid_t daemon = daemon_->pid();
  rlimit saved{};
  ASSERT_EQ(::prlimit(daemon, RLIMIT_NOFILE, nullptr, &saved), 0);
  rlimit lowered = saved;
  lowered.rlim_cur = static_cast<rlim_t>(lowest_free_descriptor(daemon));
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
