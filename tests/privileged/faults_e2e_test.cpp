// SPDX-License-Identifier: Apache-2.0
// End to end, as root: the daemon keeps its numbers right through faults: a driver library
// replaced on disk, PID reuse, exec, a daemon restart, a full ring buffer and launch map,
// processes killed in the middle of a call, and a stalled main loop (the watchdog).
#include <atomic>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <linux/sched.h>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <set>
#include <sstream>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "e2e_fixture.h"

namespace neutracer::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using LabelList = std::vector<std::pair<std::string, std::string>>;

// Splits `name{a="b",c="d"}` into its name and labels (the daemon's values hold no quotes).
std::pair<std::string, std::map<std::string, std::string>> split_series(const std::string &text) {
  const auto brace = text.find('{');
  std::pair<std::string, std::map<std::string, std::string>> out{text.substr(0, brace), {}};
  if (brace == std::string::npos)
    return out;
  std::size_t at = brace + 1;
  while (at < text.size() && text[at] != '}') {
    const auto equals = text.find("=\"", at);
    const auto quote = text.find('"', equals + 2);
    if (equals == std::string::npos || quote == std::string::npos)
      break;
    out.second[text.substr(at, equals - at)] = text.substr(equals + 2, quote - equals - 2);
    at = quote + 1;
    if (at < text.size() && text[at] == ',')
      ++at;
  }
  return out;
}

bool has_labels(const std::map<std::string, std::string> &labels, const LabelList &want) {
  for (const auto &[key, value] : want)
    if (!labels.contains(key) || labels.at(key) != value)
      return false;
  return true;
}

// Every series (any metric) that carries the label pid="<pid>".
std::vector<std::string> series_of_pid(const Scrape &scrape, const std::string &pid) {
  std::vector<std::string> found;
  for (const auto &[text, value] : scrape)
    if (has_labels(split_series(text).second, {{"pid", pid}}))
      found.push_back(text);
  return found;
}

// Runs a shell command and returns its stdout; its wait status goes to `status`.
std::string run_command(const std::string &command, int *status = nullptr) {
  const auto close_pipe = [](FILE *pipe) { ::pclose(pipe); };
  std::unique_ptr<FILE, decltype(close_pipe)> pipe(::popen(command.c_str(), "r"), close_pipe);
  std::string output;
  if (!pipe)
    return output;
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe.get()))
    output += buffer;
  const int exit_status = ::pclose(pipe.release());
  if (status)
    *status = exit_status;
  return output;
}

// A datagram socket standing in for systemd's NOTIFY_SOCKET; records what arrives, and when.
class NotifyListener {
public:
  explicit NotifyListener(fs::path path) : path_(std::move(path)) {
    fs::remove(path_);
    socket_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path_.c_str(), sizeof address.sun_path - 1);
    bound_ = socket_ >= 0 &&
             ::bind(socket_, reinterpret_cast<sockaddr *>(&address), sizeof address) == 0;
    if (bound_)
      reader_ = std::thread([this] { collect(); });
  }
  ~NotifyListener() {
    stop_.store(true);
    if (reader_.joinable())
      reader_.join();
    if (socket_ >= 0)
      ::close(socket_);
    fs::remove(path_);
  }
  NotifyListener(const NotifyListener &) = delete;
  NotifyListener &operator=(const NotifyListener &) = delete;

  bool bound() const { return bound_; }
  const fs::path &path() const { return path_; }

  std::size_t pings_since(std::chrono::steady_clock::time_point since) {
    const std::lock_guard lock(mutex_);
    std::size_t pings = 0;
    for (const auto &[when, text] : messages_)
      if (when >= since && text.find("WATCHDOG=1") != std::string::npos)
        ++pings;
    return pings;
  }

  bool got(const std::string &text) {
    const std::lock_guard lock(mutex_);
    for (const auto &[when, message] : messages_)
      if (message.find(text) != std::string::npos)
        return true;
    return false;
  }

private:
  void collect() {
    while (!stop_.load()) {
      pollfd pfd{socket_, POLLIN, 0};
      if (::poll(&pfd, 1, 50) <= 0)
        continue;
      char buffer[4096];
      const ssize_t n = ::recv(socket_, buffer, sizeof buffer, 0);
      if (n <= 0)
        continue;
      const std::lock_guard lock(mutex_);
      messages_.emplace_back(std::chrono::steady_clock::now(),
                             std::string(buffer, static_cast<std::size_t>(n)));
    }
  }

  fs::path path_;
  int socket_ = -1;
  bool bound_ = false;
  std::thread reader_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::string>> messages_;
};

// A child started with a chosen PID (clone3 with set_tid; root only), stdout into a file.
class ChildWithPid {
public:
  ChildWithPid(pid_t wanted, const std::vector<std::string> &argv, fs::path stdout_path)
      : stdout_path_(std::move(stdout_path)) {
    std::vector<char *> args;
    for (const auto &arg : argv)
      args.push_back(const_cast<char *>(arg.c_str()));
    args.push_back(nullptr);
    const std::string out = stdout_path_.string();
    pid_t set_tid[1] = {wanted};
    clone_args clone{};
    clone.exit_signal = SIGCHLD;
    clone.set_tid = reinterpret_cast<std::uint64_t>(set_tid);
    clone.set_tid_size = 1;
    const long child = ::syscall(SYS_clone3, &clone, sizeof clone);
    if (child == 0) {
      const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0)
        ::dup2(fd, STDOUT_FILENO);
      ::execv(args[0], args.data());
      _exit(127);
    }
    pid_ = child > 0 ? static_cast<pid_t>(child) : -1;
    error_ = child > 0 ? 0 : errno;
  }
  ~ChildWithPid() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ChildWithPid(const ChildWithPid &) = delete;
  ChildWithPid &operator=(const ChildWithPid &) = delete;

  pid_t pid() const { return pid_; }
  int error() const { return error_; }
  bool printed(const std::string &line_prefix, std::chrono::milliseconds timeout) const {
    return eventually(
        [&] {
          std::ifstream in(stdout_path_);
          for (std::string line; std::getline(in, line);)
            if (line.starts_with(line_prefix))
              return true;
          return false;
        },
        timeout);
  }
  std::optional<int> wait_exit(std::chrono::milliseconds timeout) {
    std::optional<int> result;
    eventually(
        [&] {
          int status = 0;
          if (::waitpid(pid_, &status, WNOHANG) != pid_)
            return false;
          reaped_ = true;
          result = status;
          return true;
        },
        timeout);
    return result;
  }

private:
  fs::path stdout_path_;
  pid_t pid_ = -1;
  int error_ = 0;
  bool reaped_ = false;
};

class FaultsE2E : public DaemonE2E {
protected:
  struct Program {
    std::unique_ptr<ChildProcess> process;
    std::string pid;
  };

  // Starts a scenario ("ready" first, then `steps`) and waits until the daemon traces it.
  // Steps usually begin with a gate (`wait:` + gate(...)) so nothing runs before that.
  Program start(const std::vector<std::string> &steps,
                const std::string &program = NEUTRACER_SCENARIO_PATH) {
    static int counter = 0;
    std::vector<std::string> argv{program, "ready"};
    argv.insert(argv.end(), steps.begin(), steps.end());
    Program started;
    started.process = std::make_unique<ChildProcess>(
        argv, (dir_ / ("scenario" + std::to_string(counter++) + ".err")).string());
    const auto ready = started.process->wait_for_line("ready ", 10s);
    EXPECT_TRUE(ready) << "scenario did not start";
    if (ready) {
      started.pid = ready->substr(6);
      expect_traced(started.pid);
    }
    return started;
  }

  void expect_traced(const std::string &pid) {
    EXPECT_TRUE(eventually(
        [&] {
          return value(scrape(), "neutracer_cuda_memory_used_bytes", {{"pid", pid}}) >= 0;
        },
        10s))
        << "daemon never traced pid " << pid << "; log: " << log();
  }

  std::string gate(const std::string &name) const { return (dir_ / name).string(); }
  void open_gate(const std::string &path) { std::ofstream(path).put('\n'); }

  // Opens `gate_path` and waits until the program is parked at `next_gate`, then for two
  // scans, so that everything it did is published.
  void pass(Program &program, const std::string &gate_path, const std::string &next_gate) {
    open_gate(gate_path);
    ASSERT_TRUE(program.process->wait_for_line("waiting " + next_gate, 30s))
        << "scenario did not reach " << next_gate;
    wait_scans(2);
  }

  void finish(Program &program, const std::string &last_gate) {
    open_gate(last_gate);
    const auto status = program.process->wait_exit(10s);
    ASSERT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
        << "scenario failed; stderr in " << dir_;
  }

  double of(const Scrape &s, const std::string &name, const std::string &pid,
            LabelList more = {}) const {
    more.insert(more.begin(), {"pid", pid});
    return value(s, name, more);
  }

  void TearDown() override {
    stop_daemon();
    DaemonE2E::TearDown();
  }

  // SIGTERM and a clean exit. Removing the uprobes takes the kernel long on a host where other
  // tracers attach and detach too (45 s seen beside a churn benchmark).
  bool stop_daemon() {
    if (!daemon_)
      return true;
    const auto status = daemon_->stop(SIGTERM, 120s);
    const bool clean = status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0;
    EXPECT_TRUE(clean) << "daemon did not exit cleanly; log: " << log();
    daemon_.reset();
    return clean;
  }

  // Stops the daemon (SIGTERM) and starts a new one with the same flags and port.
  void restart_daemon() {
    static int restarts = 0;
    ASSERT_TRUE(stop_daemon());
    fs::rename(dir_ / "daemon.log",
               dir_ / ("daemon-before-restart-" + std::to_string(restarts++) + ".log"));
    daemon_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{NEUTRACER_DAEMON_PATH, "--config", (dir_ / "config.yaml").string(),
                                 "--listen", "127.0.0.1:" + std::to_string(port_),
                                 "--scan-interval", "100ms", "--log-level", "debug"},
        (dir_ / "daemon.log").string());
    ASSERT_TRUE(eventually(
        [&] {
          const auto reply = http_get(port_, "/healthz");
          return reply && reply->status == 200;
        },
        20s))
        << "restarted daemon did not become healthy; log: " << log();
  }
};

// Case 1: a package upgrade writes the new library under a temporary name and renames it over
// the old one. Running processes keep the old, now deleted, inode; new ones map the new one.
TEST_F(FaultsE2E, LibraryReplacedOnDiskKeepsOldAndNewProcessesTraced) {
  // A private copy of the driver and the program (RUNPATH $ORIGIN), so only it is replaced.
  const auto driver_dir = dir_ / "driver";
  fs::create_directories(driver_dir);
  const auto build_dir = fs::path(NEUTRACER_SCENARIO_PATH).parent_path();
  fs::copy_file(NEUTRACER_SCENARIO_PATH, driver_dir / "neutracer-scenario");
  fs::copy_file(build_dir / "libcuda.so.1", driver_dir / "libcuda.so.1");
  const std::string program = (driver_dir / "neutracer-scenario").string();

  auto old_process =
      start({"wait:" + gate("old-1"), "launch:before_upgrade:10", "wait:" + gate("old-2"),
             "launch:after_upgrade:20", "wait:" + gate("old-3"), "launch:after_restart:40",
             "wait:" + gate("old-4")},
            program);
  pass(old_process, gate("old-1"), gate("old-2"));
  EXPECT_EQ(of(scrape(), "neutracer_cuda_kernel_launches_total", old_process.pid,
               {{"kernel", "before_upgrade"}}),
            10);

  struct stat before {};
  ASSERT_EQ(::stat((driver_dir / "libcuda.so.1").c_str(), &before), 0);
  fs::copy_file(driver_dir / "libcuda.so.1", driver_dir / ".libcuda.so.1.dpkg-new");
  fs::rename(driver_dir / ".libcuda.so.1.dpkg-new", driver_dir / "libcuda.so.1");
  struct stat after {};
  ASSERT_EQ(::stat((driver_dir / "libcuda.so.1").c_str(), &after), 0);
  ASSERT_NE(before.st_ino, after.st_ino);
  std::ifstream maps("/proc/" + old_process.pid + "/maps");
  const std::string maps_text((std::istreambuf_iterator<char>(maps)), {});
  ASSERT_NE(maps_text.find("libcuda.so.1 (deleted)"), std::string::npos) << maps_text;

  auto new_process =
      start({"wait:" + gate("new-1"), "launch:new_library:30", "wait:" + gate("new-2"),
             "launch:new_after_restart:50", "wait:" + gate("new-3")},
            program);
  pass(old_process, gate("old-2"), gate("old-3"));
  pass(new_process, gate("new-1"), gate("new-2"));
  auto s = scrape();
  EXPECT_EQ(
      of(s, "neutracer_cuda_kernel_launches_total", old_process.pid, {{"kernel", "after_upgrade"}}),
      20)
      << "the process mapping the deleted library is no longer traced";
  EXPECT_EQ(
      of(s, "neutracer_cuda_kernel_launches_total", new_process.pid, {{"kernel", "new_library"}}),
      30)
      << "the process mapping the new library is not traced";

  // A daemon started after the upgrade finds the old inode only as a deleted mapping.
  restart_daemon();
  expect_traced(old_process.pid);
  expect_traced(new_process.pid);
  wait_scans(2);
  pass(old_process, gate("old-3"), gate("old-4"));
  pass(new_process, gate("new-2"), gate("new-3"));
  s = scrape();
  EXPECT_EQ(
      of(s, "neutracer_cuda_kernel_launches_total", old_process.pid, {{"kernel", "after_restart"}}),
      40)
      << "a daemon started after the upgrade does not trace the deleted library; log: " << log();
  EXPECT_EQ(of(s, "neutracer_cuda_kernel_launches_total", new_process.pid,
               {{"kernel", "new_after_restart"}}),
            50);
  // The counter is host-wide: judge the attach lines of this test's driver files only.
  std::istringstream lines(log());
  for (std::string line; std::getline(lines, line);)
    EXPECT_FALSE(line.find(driver_dir.string()) != std::string::npos &&
                 line.find(" errors; first:") != std::string::npos)
        << line;
  finish(old_process, gate("old-4"));
  finish(new_process, gate("new-3"));
}

// Case 2: a process exits and a new CUDA process gets its PID: nothing carries over.
TEST_F(FaultsE2E, ReusedPidStartsFromZero) {
  auto old_process = start({"wait:" + gate("old-1"), "launch:old_kernel:100", "alloc:1048576:2",
                            "sync:20", "wait:" + gate("old-2")});
  pass(old_process, gate("old-1"), gate("old-2"));
  const auto pid = old_process.pid;
  auto s = scrape();
  ASSERT_EQ(of(s, "neutracer_cuda_kernel_launches_total", pid, {{"kernel", "old_kernel"}}), 100);
  ASSERT_EQ(of(s, "neutracer_cuda_memory_used_bytes", pid, {{"kind", "device"}}), 2 * 1048576);

  // The old process exits and the new one takes its PID at once, inside one scan interval.
  finish(old_process, gate("old-2"));
  ChildWithPid reused(std::stoi(pid),
                      {NEUTRACER_SCENARIO_PATH, "launch:new_kernel:7", "alloc:4096:1", "sync:20",
                       "wait:" + gate("new-1")},
                      dir_ / "reused.out");
  ASSERT_EQ(reused.pid(), std::stoi(pid))
      << "clone3 with set_tid " << pid << " failed: " << std::strerror(reused.error());
  ASSERT_TRUE(reused.printed("waiting " + gate("new-1"), 10s));
  EXPECT_TRUE(eventually(
      [&] {
        return of(scrape(), "neutracer_cuda_kernel_launches_total", pid,
                  {{"kernel", "new_kernel"}}) == 7;
      },
      5s))
      << log();
  wait_scans(2);
  s = scrape();
  EXPECT_EQ(of(s, "neutracer_cuda_kernel_launches_total", pid, {{"kernel", "old_kernel"}}), -1);
  EXPECT_EQ(of(s, "neutracer_cuda_kernel_launches_total", pid), 7);
  EXPECT_EQ(of(s, "neutracer_cuda_memory_used_bytes", pid, {{"kind", "device"}}), 4096);
  EXPECT_EQ(of(s, "neutracer_cuda_memory_allocations_total", pid, {{"kind", "device"}}), 1);
  EXPECT_EQ(of(s, "neutracer_cuda_sync_wait_duration_seconds_count", pid,
               {{"api", "cuStreamSynchronize"}}),
            1);
  // One process behind the PID: a single `device` memory series per GPU label.
  std::set<std::string> gpus;
  std::size_t device_series = 0;
  for (const auto &[text, value] : s) {
    const auto [name, labels] = split_series(text);
    if (name == "neutracer_cuda_memory_used_bytes" &&
        has_labels(labels, {{"pid", pid}, {"kind", "device"}})) {
      ++device_series;
      gpus.insert(labels.contains("gpu") ? labels.at("gpu") : "");
    }
  }
  EXPECT_EQ(device_series, gpus.size());
  open_gate(gate("new-1"));
  const auto status = reused.wait_exit(10s);
  EXPECT_TRUE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
}

// Case 3: a traced process execs another CUDA program (here itself): same PID and start time,
// but a new image whose counts start from zero.
TEST_F(FaultsE2E, ExecStartsANewImageFromZero) {
  auto process = start({"wait:" + gate("g1"), "launch:before_exec:100", "alloc:1048576:3",
                        "sync:20", "wait:" + gate("g2"), "exec", "ready", "wait:" + gate("g3"),
                        "launch:after_exec:5", "alloc:4096:1", "wait:" + gate("g4")});
  pass(process, gate("g1"), gate("g2"));
  auto s = scrape();
  ASSERT_EQ(of(s, "neutracer_cuda_kernel_launches_total", process.pid, {{"kernel", "before_exec"}}),
            100);
  ASSERT_EQ(of(s, "neutracer_cuda_memory_used_bytes", process.pid, {{"kind", "device"}}),
            3 * 1048576);

  open_gate(gate("g2"));
  ASSERT_TRUE(process.process->wait_for_line("ready " + process.pid, 10s)) << "exec failed";
  ASSERT_TRUE(process.process->wait_for_line("waiting " + gate("g3"), 10s));
  // The old image's memory, kernels and waits go; the process stays traced.
  EXPECT_TRUE(eventually(
      [&] {
        const auto now = scrape();
        return of(now, "neutracer_cuda_memory_used_bytes", process.pid, {{"kind", "device"}}) ==
                   0 &&
               of(now, "neutracer_cuda_kernel_launches_total", process.pid,
                  {{"kernel", "before_exec"}}) == -1;
      },
      5s))
      << "the old image's series carried over into the new one; log: " << log();
  pass(process, gate("g3"), gate("g4"));
  s = scrape();
  EXPECT_EQ(of(s, "neutracer_cuda_kernel_launches_total", process.pid), 5);
  EXPECT_EQ(of(s, "neutracer_cuda_kernel_launches_total", process.pid, {{"kernel", "after_exec"}}),
            5);
  EXPECT_EQ(of(s, "neutracer_cuda_memory_used_bytes", process.pid, {{"kind", "device"}}), 4096);
  EXPECT_EQ(of(s, "neutracer_cuda_memory_allocations_total", process.pid, {{"kind", "device"}}), 1);
  EXPECT_EQ(of(s, "neutracer_cuda_sync_wait_duration_seconds_count", process.pid), -1);
  finish(process, gate("g4"));
}

// Case 4: a restarted daemon re-attaches to running processes and counts only what happens
// after it started: frees of older allocations are ignored, launches counted once.
TEST_F(FaultsE2E, RestartedDaemonCountsOnlyWhatFollowsIt) {
  auto process = start({"wait:" + gate("g1"), "launch:early:10", "alloc:1048576:2", "h2d:4096:3",
                        "wait:" + gate("g2"), "free:2", "relaunch:25", "launch:late:40",
                        "alloc:4096:1", "sync:20", "wait:" + gate("g3")});
  pass(process, gate("g1"), gate("g2"));
  ASSERT_EQ(of(scrape(), "neutracer_cuda_memory_used_bytes", process.pid, {{"kind", "device"}}),
            2 * 1048576);

  restart_daemon();
  expect_traced(process.pid);
  pass(process, gate("g2"), gate("g3"));
  const auto s = scrape();
  const auto &pid = process.pid;
  EXPECT_EQ(of(s, "neutracer_cuda_memory_used_bytes", pid, {{"kind", "device"}}), 4096);
  EXPECT_EQ(of(s, "neutracer_cuda_memory_allocations_total", pid, {{"kind", "device"}}), 1);
  EXPECT_EQ(of(s, "neutracer_cuda_memory_frees_total", pid, {{"kind", "device"}}), 0);
  EXPECT_EQ(of(s, "neutracer_cuda_memory_unknown_frees_total", pid), 2);
  // The copies were before the restart: none counted, so no copy series (-1: absent).
  EXPECT_EQ(of(s, "neutracer_cuda_memcpy_bytes_total", pid, {{"direction", "h2d"}}), -1);
  // "early" was named before the restart: its later launches are unresolved, counted once.
  EXPECT_EQ(of(s, "neutracer_cuda_kernel_launches_total", pid, {{"kernel", "[unresolved]"}}), 25);
  EXPECT_EQ(of(s, "neutracer_cuda_kernel_launches_total", pid, {{"kernel", "late"}}), 40);
  EXPECT_EQ(of(s, "neutracer_cuda_kernel_launches_total", pid, {{"kernel", "early"}}), -1);
  EXPECT_EQ(of(s, "neutracer_cuda_sync_wait_duration_seconds_count", pid,
               {{"api", "cuStreamSynchronize"}}),
            1);
  for (const auto &text : series_of_pid(s, pid))
    EXPECT_GE(s.at(text), 0) << text;
  finish(process, gate("g3"));
}

// Case 5: the smallest ring buffer and launch map the config allows, flooded.
class FloodE2E : public FaultsE2E {
protected:
  std::string config_yaml() const override {
    return "cuda: {ring_buffer_bytes: 4096, launch_map_entries: 1024, launch_counting: exact}\n";
  }
};

TEST_F(FloodE2E, DropsAreCountedAndTotalsNeverExceedTheTruth) {
  constexpr int kAllocations = 20000;
  constexpr int kKernels = 1500;
  std::vector<std::string> steps{"wait:" + gate("g1"), "alloc:512:" + std::to_string(kAllocations),
                                 "free_all"};
  for (int i = 0; i < kKernels; ++i)
    steps.push_back("launch:kernel_" + std::to_string(i) + ":2");
  steps.push_back("wait:" + gate("g2"));
  auto process = start(steps);
  pass(process, gate("g1"), gate("g2"));
  const auto s = scrape();
  const auto &pid = process.pid;
  const double ring_drops = value(s, "neutracer_events_dropped_total", {{"source", "ring_buffer"}});
  const double launch_map_full =
      value(s, "neutracer_bpf_map_update_errors_total", {{"map", "launches"}});
  const double allocations =
      of(s, "neutracer_cuda_memory_allocations_total", pid, {{"kind", "device"}});
  const double frees = of(s, "neutracer_cuda_memory_frees_total", pid, {{"kind", "device"}});
  const double unknown_frees = of(s, "neutracer_cuda_memory_unknown_frees_total", pid);
  const double launches = of(s, "neutracer_cuda_kernel_launches_total", pid);
  std::cout << "flood: " << allocations << " allocations, " << frees << " frees, " << unknown_frees
            << " unknown frees, " << ring_drops << " ring buffer drops; " << launches
            << " launches, " << launch_map_full << " launch map full\n";
  EXPECT_GT(ring_drops, 0);
  EXPECT_GT(launch_map_full, 0);
  // The launch map holds at least this process's counted kernels and never more than its size.
  EXPECT_EQ(value(s, "neutracer_bpf_map_max_entries", {{"map", "launches"}}), 1024);
  EXPECT_LE(value(s, "neutracer_bpf_map_entries", {{"map", "launches"}}), 1024);
  EXPECT_GE(value(s, "neutracer_bpf_map_entries", {{"map", "launches"}}), launches / 2);
  // Never more than the truth, and every event lost is counted as dropped.
  EXPECT_LE(allocations, kAllocations);
  EXPECT_LE(frees + unknown_frees, kAllocations);
  EXPECT_GE(allocations + frees + unknown_frees + ring_drops, 2 * kAllocations);
  EXPECT_LE(launches, 2 * kKernels);
  EXPECT_LE(launches, 2 * 1024);
  EXPECT_GE(launches + launch_map_full, 2 * kKernels);
  EXPECT_LE(of(s, "neutracer_cuda_memory_used_bytes", pid, {{"kind", "device"}}),
            512.0 * kAllocations);
  for (const auto &text : series_of_pid(s, pid))
    EXPECT_GE(s.at(text), 0) << text;
  const auto health = http_get(port_, "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  finish(process, gate("g2"));
  // The map entries of the exited process are freed: launches are counted again.
  auto next = start({"wait:" + gate("g3"), "launch:after_flood:9", "wait:" + gate("g4")});
  pass(next, gate("g3"), gate("g4"));
  EXPECT_EQ(of(scrape(), "neutracer_cuda_kernel_launches_total", next.pid), 9);
  finish(next, gate("g4"));
}

// Case 6: processes SIGKILLed inside a long synchronize leave nothing behind: no in-flight
// entries in the daemon's BPF map, no hang alert, no series.
class KilledMidCallE2E : public FaultsE2E {
protected:
  std::string config_yaml() const override {
    return "detectors:\n  hang: {call_threshold: 1s, stalled_launches: 1m}\n";
  }

  // Thread ids (tgid) of the entries in the inflight map of this fixture's daemon, found
  // through the map descriptors the daemon holds (/proc/PID/fdinfo names each map's id; its
  // probes may be perf-event uprobes or uprobe_multi links, which bpftool lists apart).
  std::optional<std::multiset<std::uint32_t>> inflight_tgids() {
    std::set<std::uint64_t> maps;
    const auto fdinfo = std::filesystem::path("/proc") / std::to_string(daemon_->pid()) / "fdinfo";
    std::error_code error;
    for (const auto &entry : std::filesystem::directory_iterator(fdinfo, error)) {
      std::ifstream in(entry.path());
      for (std::string line; std::getline(in, line);)
        if (line.starts_with("map_id:"))
          maps.insert(std::stoull(line.substr(7)));
    }
    if (error || maps.empty())
      return std::nullopt;
    for (const auto map : maps) {
      const auto info =
          nlohmann::json::parse(run_command("bpftool -j map show id " + std::to_string(map)));
      if (info.value("name", "") != "inflight")
        continue;
      std::multiset<std::uint32_t> tgids;
      for (const auto &entry :
           nlohmann::json::parse(run_command("bpftool -j map dump id " + std::to_string(map)))) {
        // Raw key bytes ("0x.." strings), little-endian; pid_tgid first, tgid in its high half.
        std::uint64_t pid_tgid = 0;
        for (int byte = 7; byte >= 0; --byte)
          pid_tgid =
              pid_tgid << 8 | std::stoul(entry.at("key").at(byte).get<std::string>(), nullptr, 16);
        tgids.insert(static_cast<std::uint32_t>(pid_tgid >> 32));
      }
      return tgids;
    }
    return std::nullopt;
  }
};

TEST_F(KilledMidCallE2E, KilledProcessesLeaveNoInflightEntriesAlertsOrSeries) {
  constexpr int kKills = 12;
  std::set<std::uint32_t> killed;
  for (int i = 0; i < kKills; ++i) {
    const auto go = gate("kill-" + std::to_string(i));
    auto process = start({"wait:" + go, "sync:600000"});
    const auto &pid = process.pid;
    open_gate(go);
    // The call is in flight: the daemon shows the wait (the first one long enough to alert).
    ASSERT_TRUE(eventually(
        [&] {
          return of(scrape(), "neutracer_cuda_sync_in_progress_seconds", pid,
                    {{"api", "cuStreamSynchronize"}}) > (i == 0 ? 1.5 : 0.0);
        },
        10s))
        << "sync of pid " << pid << " never showed as in progress";
    if (i == 0) {
      ASSERT_TRUE(
          eventually([&] { return of(scrape(), "neutracer_cuda_hang_suspected", pid) == 1; }, 5s));
      EXPECT_GE(scrape()["neutracer_alerts_active{alert=\"hang\"}"], 1);
      const auto tgids = inflight_tgids();
      ASSERT_TRUE(tgids) << "cannot read the daemon's inflight map with bpftool";
      EXPECT_EQ(tgids->count(static_cast<std::uint32_t>(std::stoul(pid))), 1);
      EXPECT_GE(value(scrape(), "neutracer_bpf_map_entries", {{"map", "inflight"}}), 1);
      EXPECT_EQ(value(scrape(), "neutracer_bpf_map_max_entries", {{"map", "inflight"}}), 16384);
    }
    const auto status = process.process->stop(SIGKILL, 10s);
    ASSERT_TRUE(status && WIFSIGNALED(*status));
    killed.insert(static_cast<std::uint32_t>(std::stoul(pid)));
  }
  wait_scans(3);
  const auto tgids = inflight_tgids();
  ASSERT_TRUE(tgids);
  for (const auto tgid : killed)
    EXPECT_EQ(tgids->count(tgid), 0) << "inflight entry of killed pid " << tgid << " left";
  const auto s = scrape();
  for (const auto tgid : killed)
    EXPECT_EQ(series_of_pid(s, std::to_string(tgid)), std::vector<std::string>{});
  const auto alerts = http_get(port_, "/api/v1/alerts");
  ASSERT_TRUE(alerts && alerts->status == 200);
  std::set<std::string> ours;
  for (const auto tgid : killed)
    ours.insert(std::to_string(tgid));
  EXPECT_TRUE(alerts_of(nlohmann::json::parse(alerts->body)["active"], ours).empty())
      << alerts->body;
}

// Case 7: a main loop stuck in a read stops the watchdog pings; /healthz reports it and
// scrapes keep answering. The loop reads a /proc tree of the test's making, where one
// process's maps file is a named pipe: opening it blocks until a writer comes.
class WatchdogE2E : public FaultsE2E {
protected:
  std::string config_yaml() const override { return "proc_root: " + proc_.string() + "\n"; }

  void SetUp() override {
    static int sockets = 0;
    // A proc_root must hold a process directory (with its own stat) to validate; one with an
    // empty maps is scanned and skipped like a process without libcuda.
    proc_ = fs::temp_directory_path() / ("neutracer-watchdog-proc-" + std::to_string(::getpid()) +
                                         "-" + std::to_string(sockets));
    fs::create_directories(proc_ / "1");
    std::ofstream(proc_ / "1" / "stat") << "1 (init) S 0 1 1 0 -1 4194560\n";
    std::ofstream(proc_ / "1" / "maps");
    notify_ = std::make_unique<NotifyListener>(
        fs::temp_directory_path() /
        ("neutracer-notify-" + std::to_string(::getpid()) + "-" + std::to_string(sockets++)));
    ASSERT_TRUE(notify_->bound()) << "cannot bind " << notify_->path();
    // The daemon inherits the environment: systemd's notify socket and a 400 ms watchdog.
    ::setenv("NOTIFY_SOCKET", notify_->path().c_str(), 1);
    ::setenv("WATCHDOG_USEC", "400000", 1);
    DaemonE2E::SetUp();
    ::unsetenv("NOTIFY_SOCKET");
    ::unsetenv("WATCHDOG_USEC");
  }

  void TearDown() override {
    if (fs::exists(stuck_process()))
      release_stuck_process(); // a failed test must not leave the daemon blocked
    FaultsE2E::TearDown();
    fs::remove_all(proc_);
  }

  fs::path stuck_process() const { return proc_ / "4242"; }

  // A writer lets the daemon's blocked open return (reads end once it closes); the process
  // goes, so that the next scan does not block again. False when no reader was waiting.
  bool release_stuck_process() {
    const int writer =
        ::open((stuck_process() / "maps").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    fs::remove_all(stuck_process());
    if (writer < 0)
      return false;
    ::close(writer);
    return true;
  }

  std::unique_ptr<NotifyListener> notify_;
  fs::path proc_;
};

TEST_F(WatchdogE2E, StalledLoopStopsPingsAndHealthButNotScrapes) {
  ASSERT_TRUE(eventually([&] { return notify_->got("READY=1"); }, 5s));
  const auto healthy_since = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(2s);
  EXPECT_GE(notify_->pings_since(healthy_since), 3u) << "no watchdog pings while healthy";

  // A process whose maps file blocks the scan that reads it.
  fs::create_directories(stuck_process());
  ASSERT_EQ(::mkfifo((stuck_process() / "maps").c_str(), 0600), 0);
  const auto stalled_at = std::chrono::steady_clock::now();
  std::optional<HttpReply> health;
  ASSERT_TRUE(eventually(
      [&] {
        health = http_get(port_, "/healthz");
        return health && health->status == 503;
      },
      15s))
      << "healthz never reported the stall";
  EXPECT_EQ(health->body, "main loop stalled\n");
  // At most one ping from the scan that was finishing when the pipe appeared.
  EXPECT_LE(notify_->pings_since(stalled_at), 1u);
  const auto silent_since = std::chrono::steady_clock::now();
  const auto scrape_started = std::chrono::steady_clock::now();
  const auto metrics = http_get(port_, "/metrics");
  const auto scrape_took = std::chrono::steady_clock::now() - scrape_started;
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("neutracer_scans_total"), std::string::npos);
  EXPECT_LT(scrape_took, 1s);
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(notify_->pings_since(silent_since), 0u) << "pings went on while the loop was stalled";

  // Released, the loop runs and pings again.
  ASSERT_TRUE(release_stuck_process()) << "the daemon was not blocked on the pipe";
  const auto released_at = std::chrono::steady_clock::now();
  EXPECT_TRUE(eventually(
      [&] {
        const auto reply = http_get(port_, "/healthz");
        return reply && reply->status == 200;
      },
      5s));
  EXPECT_TRUE(eventually([&] { return notify_->pings_since(released_at) >= 2; }, 5s));
}

} // namespace
} // namespace neutracer::test
