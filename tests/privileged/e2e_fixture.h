// SPDX-License-Identifier: Apache-2.0
#pragma once
// The fixture of the end-to-end tests: a real daemon on a free port with a 100 ms scan
// interval, and stand-in scenarios it traces.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "daemon_harness.h"
#include "journal_capture.h"

namespace neutracer::test {

using namespace std::chrono_literals;

// The daemon sees every CUDA process on the host, other tests' and other daemons' stand-ins
// included: a test judges only what belongs to its own processes and library.

// The entries of an /api/v1/alerts list ("active" or "recent") about `pids`.
inline nlohmann::json alerts_of(const nlohmann::json &list, const std::set<std::string> &pids) {
  auto ours = nlohmann::json::array();
  for (const auto &alert : list)
    if (alert.contains("pid") && pids.contains(std::to_string(alert["pid"].get<long long>())))
      ours.push_back(alert);
  return ours;
}

inline std::string standin_library() {
  return std::string(NEUTRACER_BUILD_DIR) + "/tests/standin/libcuda.so.1";
}

// Whether a process maps this build's stand-in driver (another test's, say): the daemon then
// rightly keeps its probes.
inline bool standin_library_mapped() {
  const auto path = standin_library();
  std::error_code error;
  for (const auto &entry : std::filesystem::directory_iterator("/proc", error)) {
    const auto name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit))
      continue;
    std::ifstream maps(entry.path() / "maps");
    for (std::string line; std::getline(maps, line);)
      if (line.ends_with(" " + path))
        return true;
  }
  return false;
}

// The daemon's log line for detaching from this build's stand-in driver (by device and inode,
// as the daemon names it).
inline std::string standin_detach_line() {
  struct stat file {};
  const auto path = standin_library();
  if (::stat(path.c_str(), &file) != 0)
    return "(cannot stat " + path + ")";
  return "detaching from library dev=" + std::to_string(file.st_dev) +
         " inode=" + std::to_string(file.st_ino) + ":";
}
namespace fs = std::filesystem;

constexpr const char *kComm = "neutracer-scena"; // the kernel truncates comm to 15 bytes

class DaemonE2E : public ::testing::Test {
protected:
  // The daemon's config file for this fixture; the command line adds listen, scan interval
  // and log level.
  virtual std::string config_yaml() const { return "\n"; }
  virtual std::string scan_interval() const { return "100ms"; }
  // Runs the daemon in its own mount namespace with a test socket in place of journald's.
  virtual bool capture_journal() const { return false; }

  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "privileged tests load BPF programs: run them as root "
                                  "(ctest -L unit runs the tests that need no root)";
    static int test_number = 0;
    dir_ = fs::temp_directory_path() /
           ("neutracer-e2e-" + std::to_string(::getpid()) + "-" + std::to_string(test_number++));
    fs::create_directories(dir_);
    // Exact launch counts unless a fixture says otherwise: the tests compare them to the truth.
    const auto yaml = config_yaml();
    std::ofstream(dir_ / "config.yaml")
        << yaml
        << (yaml.find("cuda:") == std::string::npos ? "cuda: {launch_counting: exact}\n" : "");
    port_ = free_tcp_port();
    std::vector<std::string> argv{NEUTRACER_DAEMON_PATH,
                                  "--config",
                                  (dir_ / "config.yaml").string(),
                                  "--listen",
                                  "127.0.0.1:" + std::to_string(port_),
                                  "--scan-interval",
                                  scan_interval(),
                                  "--log-level",
                                  "debug"};
    if (capture_journal()) {
      journal_ = std::make_unique<JournalCapture>(dir_ / "journal");
      argv = journal_->wrap(argv);
    }
    daemon_ = std::make_unique<ChildProcess>(argv, (dir_ / "daemon.log").string());
    ASSERT_TRUE(eventually(
        [&] {
          const auto reply = http_get(port_, "/healthz");
          return reply && reply->status == 200;
        },
        20s))
        << "daemon did not become healthy; log: " << log();
  }

  void TearDown() override {
    if (daemon_) {
      // Removing ~110 uprobes takes the kernel several seconds (see CudaTracer::~CudaTracer).
      const auto status = daemon_->stop(SIGTERM, 45s);
      EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
          << "daemon did not exit cleanly on SIGTERM; log: " << log();
    }
    if (!HasFailure())
      fs::remove_all(dir_);
    else
      std::cerr << "kept " << dir_ << " for inspection\n";
  }

  std::string log() const {
    std::ifstream in(dir_ / "daemon.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  Scrape scrape() const {
    const auto reply = http_get(port_, "/metrics");
    return reply && reply->status == 200 ? parse_scrape(reply->body) : Scrape{};
  }

  // The sum of the series of `name` that carry all of `labels` (and maybe more, e.g. every
  // `gpu` of a process), or -1 when there is none.
  double value(const Scrape &s, const std::string &name,
               const std::vector<std::pair<std::string, std::string>> &labels) const {
    double sum = 0;
    bool found = false;
    for (auto it = s.lower_bound(name); it != s.end() && it->first.starts_with(name); ++it) {
      const auto &key = it->first;
      if (key != name && key[name.size()] != '{')
        continue;
      const bool all = std::all_of(labels.begin(), labels.end(), [&](const auto &label) {
        const auto pair = label.first + "=\"" + label.second + "\"";
        for (auto at = key.find(pair); at != std::string::npos; at = key.find(pair, at + 1))
          if ((key[at - 1] == '{' || key[at - 1] == ',') &&
              (key[at + pair.size()] == ',' || key[at + pair.size()] == '}'))
            return true;
        return false;
      });
      if (all) {
        sum += it->second;
        found = true;
      }
    }
    return found ? sum : -1;
  }

  // Waits for `scans` more completed scans, so everything before now is published.
  void wait_scans(int scans) {
    const double start = scrape()["neutracer_scans_total"];
    ASSERT_TRUE(
        eventually([&] { return scrape()["neutracer_scans_total"] >= start + scans; }, 10s));
  }

  struct Scenario {
    std::unique_ptr<ChildProcess> process;
    std::string pid;
    fs::path go, exit;
  };

  // Starts the scenario: `before` runs before the daemon has attached, `steps` after.
  // Returns once all steps ran and the daemon published what they did.
  // `during`, when given, runs while the steps run (after they were released).
  Scenario run_scenario(const std::vector<std::string> &before,
                        const std::vector<std::string> &steps,
                        const std::vector<std::string> &env = {},
                        const std::function<void(const std::string &pid)> &during = {}) {
    static int counter = 0;
    Scenario scenario;
    scenario.go = dir_ / ("go" + std::to_string(counter));
    scenario.exit = dir_ / ("exit" + std::to_string(counter++));
    std::vector<std::string> argv{NEUTRACER_SCENARIO_PATH, "ready"};
    argv.insert(argv.end(), before.begin(), before.end());
    argv.push_back("wait:" + scenario.go.string());
    argv.insert(argv.end(), steps.begin(), steps.end());
    argv.push_back("wait:" + scenario.exit.string());
    scenario.process = std::make_unique<ChildProcess>(argv, (dir_ / "scenario.err").string(), env);
    const auto ready = scenario.process->wait_for_line("ready ", 10s);
    EXPECT_TRUE(ready) << "scenario did not start";
    if (!ready)
      return scenario;
    scenario.pid = ready->substr(6);
    EXPECT_TRUE(scenario.process->wait_for_line("waiting " + scenario.go.string(), 10s));
    // Discovered and attached: the daemon exports the process's memory series.
    EXPECT_TRUE(eventually(
        [&] {
          return value(scrape(), "neutracer_cuda_memory_used_bytes",
                       {{"pid", scenario.pid}, {"comm", kComm}, {"kind", "device"}}) >= 0;
        },
        10s))
        << "daemon never discovered scenario pid " << scenario.pid << "; log: " << log();
    std::ofstream(scenario.go).put('\n');
    if (during)
      during(scenario.pid);
    EXPECT_TRUE(scenario.process->wait_for_line("waiting " + scenario.exit.string(), 30s))
        << "scenario steps did not finish";
    wait_scans(2);
    return scenario;
  }

  void finish(Scenario &scenario) {
    std::ofstream(scenario.exit).put('\n');
    const auto status = scenario.process->wait_exit(10s);
    ASSERT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "scenario failed; stderr in " << dir_ / "scenario.err";
  }

  std::vector<std::pair<std::string, std::string>>
  labels(const Scenario &scenario, const std::string &name, const std::string &value) const {
    return {{"pid", scenario.pid}, {"comm", kComm}, {name, value}};
  }

  fs::path dir_;
  int port_ = 0;
  std::unique_ptr<JournalCapture> journal_;
  std::unique_ptr<ChildProcess> daemon_;
};

} // namespace neutracer::test
