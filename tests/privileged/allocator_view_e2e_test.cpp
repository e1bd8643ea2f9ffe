// SPDX-License-Identifier: Apache-2.0
// End to end, as root: the allocator view (docs/allocator-view.md) on the stand-in
// libc10_cuda.so, whose pytorch:malloc and pytorch:free tracepoints sit behind semaphores as in
// PyTorch's wheels. The driver program (neutracer-torch-allocator) also maps the stand-in
// libcuda, so the daemon traces it as a CUDA process; it allocates and frees blocks on command.
#include <csignal>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <sys/stat.h>
#include <thread>

#include "e2e_fixture.h"

namespace neutracer::test {
namespace {

using namespace std::chrono_literals;

constexpr const char *kDriverComm = "neutracer-torch"; // truncated to 15 bytes
constexpr double kMiB = 1 << 20;

class AllocatorViewE2E : public DaemonE2E {
protected:
  std::string config_yaml() const override {
    return "allocator: {view_duration: 10s, sample_bytes: 1048576}\n";
  }
  std::string scan_interval() const override { return "200ms"; }

  struct Driver {
    std::unique_ptr<ChildProcess> process;
    std::ofstream commands;
    std::string pid;
  };

  // Starts the driver with its commands read from a FIFO, and waits until the daemon traces it.
  std::unique_ptr<Driver> start_driver(const std::string &name) {
    auto driver = std::make_unique<Driver>();
    const auto fifo = dir_ / (name + ".commands");
    EXPECT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    driver->process = std::make_unique<ChildProcess>(
        std::vector<std::string>{"/bin/sh", "-c", "exec \"$0\" < \"$1\"",
                                 NEUTRACER_TORCH_ALLOCATOR_PATH, fifo.string()},
        (dir_ / (name + ".err")).string(),
        std::vector<std::string>{"LD_PRELOAD=" + standin_library()});
    driver->commands.open(fifo); // waits for the driver's shell to open it
    const auto ready = driver->process->wait_for_line("READY ", 10s);
    EXPECT_TRUE(ready) << name << " did not start";
    driver->pid = ready ? ready->substr(6) : "0";
    EXPECT_TRUE(eventually(
        [&] {
          return value(scrape(), "neutracer_cuda_memory_used_bytes",
                       {{"pid", driver->pid}, {"comm", kDriverComm}}) >= 0;
        },
        10s))
        << "the daemon never traced " << name << "; log: " << log();
    return driver;
  }

  // Sends one command and returns its answer line.
  std::string command(Driver &driver, const std::string &line) {
    driver.commands << line << '\n' << std::flush;
    const auto answer = driver.process->read_line(10s);
    return answer.value_or("(no answer to " + line + ")");
  }

  // The driver's semaphores as "malloc=M free=F".
  std::string semaphores(Driver &driver) {
    const auto answer = command(driver, "semaphores");
    return answer.starts_with("OK semaphores ") ? answer.substr(14) : answer;
  }

  double of_driver(const std::string &name, const Driver &driver) const {
    return value(scrape(), name, {{"pid", driver.pid}});
  }

  int open_view(const Driver &driver) {
    const auto reply =
        http_request(port_, "POST", "/api/v1/processes/" + driver.pid + "/allocator");
    return reply ? reply->status : 0;
  }
};

TEST_F(AllocatorViewE2E, AnAskedForViewSeesOnlyItsProcessAndGoesWhenItsTimeIsUp) {
  auto viewed = start_driver("viewed");
  auto other = start_driver("other");
  ASSERT_EQ(semaphores(*viewed), "malloc=0 free=0") << "nothing attached before the view";

  ASSERT_EQ(open_view(*viewed), 202);
  ASSERT_TRUE(
      eventually([&] { return of_driver("neutracer_allocator_view_open", *viewed) == 1; }, 5s))
      << log();
  const std::regex raised("malloc=[1-9][0-9]* free=[1-9][0-9]*");
  EXPECT_TRUE(std::regex_match(semaphores(*viewed), raised)) << semaphores(*viewed);
  EXPECT_EQ(semaphores(*other), "malloc=0 free=0") << "the probes are for the viewed process";

  // 2 MiB blocks are at least sample_bytes: every one is kept, weighing its size.
  EXPECT_TRUE(command(*viewed, "alloc 2097152 10").starts_with("OK alloc"));
  EXPECT_TRUE(command(*other, "alloc 2097152 10").starts_with("OK alloc"));
  EXPECT_TRUE(eventually(
      [&] { return of_driver("neutracer_allocator_live_bytes", *viewed) == 20 * kMiB; }, 5s))
      << of_driver("neutracer_allocator_live_bytes", *viewed);
  EXPECT_TRUE(command(*viewed, "free_oldest 4").starts_with("OK free_oldest"));
  EXPECT_TRUE(eventually(
      [&] { return of_driver("neutracer_allocator_live_bytes", *viewed) == 12 * kMiB; }, 5s))
      << of_driver("neutracer_allocator_live_bytes", *viewed);
  EXPECT_EQ(of_driver("neutracer_allocator_live_bytes", *other), -1);
  EXPECT_EQ(value(scrape(), "neutracer_allocator_views_opened_total", {{"reason", "requested"}}),
            1);

  // view_duration 10s: the probes go, and the semaphores fall back to 0.
  EXPECT_TRUE(
      eventually([&] { return of_driver("neutracer_allocator_view_open", *viewed) == 0; }, 15s));
  EXPECT_TRUE(eventually([&] { return semaphores(*viewed) == "malloc=0 free=0"; }, 5s))
      << semaphores(*viewed);
  EXPECT_EQ(value(scrape(), "neutracer_allocator_views_open", {}), 0);
  command(*viewed, "exit");
  command(*other, "exit");
}

// Views open long enough for a verdict.
class AllocatorLeakE2E : public AllocatorViewE2E {
protected:
  std::string config_yaml() const override {
    return "allocator: {view_duration: 60s, sample_bytes: 1048576}\n";
  }
};

TEST_F(AllocatorLeakE2E, TensorsKeptAtOneSiteAreALeakNamedFromTheAllocatorView) {
  auto driver = start_driver("leaking");
  ASSERT_EQ(open_view(*driver), 202);
  ASSERT_TRUE(
      eventually([&] { return of_driver("neutracer_allocator_view_open", *driver) == 1; }, 5s));
  // 4 MiB kept every 250 ms (16 MiB/s), nothing in the driver view: the verdict comes from live
  // tensor bytes, whose window minimums rise through five 2 s windows.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  bool flagged = false;
  while (!flagged && std::chrono::steady_clock::now() < deadline) {
    command(*driver, "alloc 4194304 1");
    std::this_thread::sleep_for(250ms);
    flagged = of_driver("neutracer_cuda_memory_leak_suspected", *driver) == 1;
  }
  ASSERT_TRUE(flagged) << "live bytes " << of_driver("neutracer_allocator_live_bytes", *driver)
                       << "; log: " << log();
  EXPECT_EQ(of_driver("neutracer_allocator_live_bytes_rising", *driver), 1);
  EXPECT_GT(of_driver("neutracer_allocator_live_growth_bytes_per_second", *driver), 8 * kMiB);

  nlohmann::json leak;
  EXPECT_TRUE(eventually(
      [&] {
        const auto reply = http_get(port_, "/api/v1/alerts");
        if (!reply || reply->status != 200)
          return false;
        for (const auto &alert :
             alerts_of(nlohmann::json::parse(reply->body)["recent"], {driver->pid}))
          if (alert["alert"] == "memory_leak")
            leak = alert;
        return !leak.is_null();
      },
      5s));
  ASSERT_FALSE(leak.is_null());
  EXPECT_NE(leak["summary"].get<std::string>().find("(allocator view)"), std::string::npos)
      << leak.dump();
  EXPECT_EQ(leak["fields"]["LEAK_VIEW"], "allocator");
  ASSERT_FALSE(leak["sites"].empty()) << "the kept blocks' site: " << leak.dump();
  EXPECT_EQ(leak["sites"][0]["view"], "allocator");
  EXPECT_GE(leak["sites"][0]["live_bytes"].get<double>(), 16 * kMiB);

  // The process's sites, ranked by the allocator view: the kept blocks' site first.
  const auto reply = http_get(port_, "/api/v1/processes/" + driver->pid + "/sites");
  ASSERT_TRUE(reply && reply->status == 200);
  const auto sites = nlohmann::json::parse(reply->body);
  EXPECT_EQ(sites["ranking"]["view"], "allocator") << sites.dump();
  EXPECT_EQ(sites["ranking"]["open"], true);
  EXPECT_EQ(sites["ranking"]["reason"], "requested");
  ASSERT_FALSE(sites["sites"].empty());
  EXPECT_GE(sites["sites"][0]["allocator"]["survivor_bytes"].get<double>(), 16 * kMiB)
      << sites["sites"][0].dump();
  command(*driver, "exit");
}

TEST_F(AllocatorViewE2E, AProcessThatExitsTakesItsViewAndProbesWithIt) {
  auto driver = start_driver("exiting");
  ASSERT_EQ(open_view(*driver), 202);
  ASSERT_TRUE(
      eventually([&] { return of_driver("neutracer_allocator_view_open", *driver) == 1; }, 5s));
  command(*driver, "alloc 2097152 3");
  ASSERT_TRUE(driver->process->stop(SIGKILL, 5s));
  EXPECT_TRUE(
      eventually([&] { return value(scrape(), "neutracer_allocator_views_open", {}) == 0; }, 5s))
      << log();
  EXPECT_EQ(of_driver("neutracer_allocator_view_open", *driver), -1);
  EXPECT_EQ(http_request(port_, "POST", "/api/v1/processes/" + driver->pid + "/allocator")
                .value_or(HttpReply{})
                .status,
            404);
}

} // namespace
} // namespace neutracer::test
