// SPDX-License-Identifier: Apache-2.0
// End to end, as root: NCCL's collectives (docs/nccl.md) on the stand-in libnccl.so.2. Each rank
// is a neutracer-nccl-rank process that also maps the stand-in libcuda, so the daemon traces it
// as a CUDA process and probes the NCCL file it maps; the test makes the ranks call collectives
// in step, stop, and straggle.
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <memory>
#include <netinet/in.h>
#include <poll.h>
#include <regex>
#include <sys/socket.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "e2e_fixture.h"

namespace neutracer::test {
namespace {

using namespace std::chrono_literals;

class NcclE2E : public DaemonE2E {
protected:
  std::string config_yaml() const override {
    return "nccl: {hang_after: 5s, straggler_window: 5s, straggler_min_wait: 5ms}\n";
  }
  std::string scan_interval() const override { return "200ms"; }

  struct Rank {
    std::unique_ptr<ChildProcess> process;
    std::ofstream commands;
    std::string pid;
  };

  // Starts one rank with its commands read from a FIFO, and waits until the daemon traces it.
  std::unique_ptr<Rank> start_rank(const std::string &name) {
    auto rank = std::make_unique<Rank>();
    const auto fifo = dir_ / (name + ".commands");
    EXPECT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    rank->process = std::make_unique<ChildProcess>(
        std::vector<std::string>{"/bin/sh", "-c", "exec \"$0\" < \"$1\"", NEUTRACER_NCCL_RANK_PATH,
                                 fifo.string()},
        (dir_ / (name + ".err")).string(),
        std::vector<std::string>{"LD_PRELOAD=" + standin_library()});
    rank->commands.open(fifo);
    const auto ready = rank->process->wait_for_line("READY ", 10s);
    EXPECT_TRUE(ready) << name << " did not start";
    rank->pid = ready ? ready->substr(6) : "0";
    EXPECT_TRUE(eventually(
        [&] {
          return value(scrape(), "neutracer_cuda_memory_used_bytes", {{"pid", rank->pid}}) >= 0;
        },
        10s))
        << "the daemon never traced " << name << "; log: " << log();
    return rank;
  }

  std::string command(Rank &rank, const std::string &line) {
    rank.commands << line << '\n' << std::flush;
    const auto answer = rank.process->read_line(20s);
    return answer.value_or("(no answer to " + line + ")");
  }

  // The `communicator` label of the rank's series; empty when it has none yet.
  std::string communicator_of(const Rank &rank) const {
    static const std::regex kCommunicator("communicator=\"([^\"]*)\"");
    for (const auto &[key, value] : scrape()) {
      std::smatch match;
      if (key.starts_with("neutracer_nccl_collectives_total{") &&
          key.find("pid=\"" + rank.pid + "\"") != std::string::npos &&
          std::regex_search(key, match, kCommunicator))
        return match[1];
    }
    return {};
  }

  double of_rank(const std::string &name, const Rank &rank,
                 std::vector<std::pair<std::string, std::string>> labels = {}) const {
    labels.emplace_back("pid", rank.pid);
    return value(scrape(), name, labels);
  }
};

TEST_F(NcclE2E, CollectivesAreCountedPerRankAndOneIdJoinsTheRanks) {
  auto rank0 = start_rank("rank0");
  auto rank1 = start_rank("rank1");
  auto other = start_rank("other");
  ASSERT_EQ(command(*rank0, "init jobA 0 2"), "OK init");
  ASSERT_EQ(command(*rank1, "init jobA 1 2"), "OK init");
  ASSERT_EQ(command(*other, "init jobB 0 1"), "OK init");
  for (auto *rank : {rank0.get(), rank1.get(), other.get()})
    ASSERT_EQ(command(*rank, "allreduce 1024 5"), "OK allreduce 5");
  ASSERT_EQ(command(*rank0, "broadcast 256 0"), "OK broadcast");
  ASSERT_EQ(command(*rank1, "broadcast 256 0"), "OK broadcast");
  ASSERT_EQ(command(*rank1, "send 100 0"), "OK send");

  ASSERT_TRUE(eventually(
      [&] {
        return of_rank("neutracer_nccl_collectives_total", *rank1, {{"op", "Send"}}) == 1;
      },
      5s))
      << log();
  const auto joined = communicator_of(*rank0);
  ASSERT_EQ(joined.size(), 8u) << "a short id from the unique id";
  EXPECT_EQ(communicator_of(*rank1), joined) << "one unique id, one communicator";
  EXPECT_NE(communicator_of(*other), joined);
  const std::vector<std::pair<std::string, std::string>> all_reduce{{"op", "AllReduce"}};
  for (const auto *rank : {rank0.get(), rank1.get()}) {
    EXPECT_EQ(of_rank("neutracer_nccl_collectives_total", *rank, all_reduce), 5);
    EXPECT_EQ(of_rank("neutracer_nccl_collective_bytes_total", *rank, all_reduce), 5 * 4096);
    EXPECT_EQ(of_rank("neutracer_nccl_collectives_total", *rank, {{"op", "Broadcast"}}), 1);
    EXPECT_EQ(of_rank("neutracer_nccl_collectives_total", *rank, {{"nranks", "2"}}),
              rank == rank1.get() ? 7 : 6);
  }
  EXPECT_EQ(of_rank("neutracer_nccl_collectives_total", *rank0, {{"rank", "0"}}), 6);
  EXPECT_EQ(of_rank("neutracer_nccl_collectives_total", *rank1, {{"rank", "1"}}), 7);
  EXPECT_EQ(of_rank("neutracer_nccl_collective_bytes_total", *rank1, {{"op", "Send"}}), 400);
  EXPECT_EQ(value(scrape(), "neutracer_nccl_hang_suspected", {{"communicator", joined}}), 0)
      << "in step";
  EXPECT_EQ(
      value(scrape(), "neutracer_nccl_hang_suspected", {{"communicator", communicator_of(*other)}}),
      -1)
      << "one rank alone is not judged";

  // A destroyed communicator goes with its series.
  ASSERT_EQ(command(*other, "destroy"), "OK destroy");
  EXPECT_TRUE(eventually([&] { return communicator_of(*other).empty(); }, 5s));
  for (auto *rank : {rank0.get(), rank1.get(), other.get()})
    command(*rank, "exit");
}

TEST_F(NcclE2E, ARankThatStopsIsAHangAndRanksPausedTogetherAreNot) {
  auto rank0 = start_rank("rank0");
  auto rank1 = start_rank("rank1");
  ASSERT_EQ(command(*rank0, "init jobH 0 2"), "OK init");
  ASSERT_EQ(command(*rank1, "init jobH 1 2"), "OK init");
  ASSERT_EQ(command(*rank0, "allreduce 64 3"), "OK allreduce 3");
  ASSERT_EQ(command(*rank1, "allreduce 64 3"), "OK allreduce 3");
  ASSERT_TRUE(eventually([&] { return !communicator_of(*rank1).empty(); }, 5s)) << log();
  const auto id = communicator_of(*rank0);

  // Both paused at the same collective, past hang_after: a checkpoint, not a hang.
  std::this_thread::sleep_for(7s);
  EXPECT_EQ(value(scrape(), "neutracer_nccl_hang_suspected", {{"communicator", id}}), 0);

  // Rank 0 calls the next all-reduce, rank 1 never does: rank 0 waits in it.
  const auto stalled_at = std::chrono::steady_clock::now();
  ASSERT_EQ(command(*rank0, "allreduce 64 1"), "OK allreduce 1");
  ASSERT_TRUE(eventually(
      [&] {
        return value(scrape(), "neutracer_nccl_hang_suspected", {{"communicator", id}}) == 1;
      },
      15s))
      << log();
  EXPECT_GE(std::chrono::steady_clock::now() - stalled_at, 5s) << "not before hang_after";
  EXPECT_EQ(of_rank("neutracer_nccl_rank_waiting", *rank0), 1);
  EXPECT_EQ(of_rank("neutracer_nccl_rank_waiting", *rank1), -1);
  EXPECT_NE(log().find("nccl_hang in communicator " + id), std::string::npos) << log();
  // The site is the collective's caller, not NCCL's own code.
  EXPECT_NE(log().find("rank 0 (neutracer-nccl-, pid " + rank0->pid +
                       ") waits in AllReduce #4 at run_allreduce (neutracer-nccl-rank"),
            std::string::npos)
      << log();

  // Rank 1 catches up: the ranks agree again.
  ASSERT_EQ(command(*rank1, "allreduce 64 1"), "OK allreduce 1");
  EXPECT_TRUE(eventually(
      [&] {
        return value(scrape(), "neutracer_nccl_hang_suspected", {{"communicator", id}}) == 0;
      },
      5s));
  command(*rank0, "exit");
  command(*rank1, "exit");
}

TEST_F(NcclE2E, TheRankThatArrivesLastIsNamedTheStraggler) {
  auto rank0 = start_rank("rank0");
  auto rank1 = start_rank("rank1");
  ASSERT_EQ(command(*rank0, "init jobS 0 2"), "OK init");
  ASSERT_EQ(command(*rank1, "init jobS 1 2"), "OK init");
  // Rank 1 calls each collective about 20 ms after rank 0, for 4 s: lateness spread over more
  // than half of the 5 s window.
  for (const auto end = std::chrono::steady_clock::now() + 4s;
       std::chrono::steady_clock::now() < end;) {
    ASSERT_EQ(command(*rank0, "allreduce 64 1"), "OK allreduce 1");
    std::this_thread::sleep_for(20ms);
    ASSERT_EQ(command(*rank1, "allreduce 64 1"), "OK allreduce 1");
  }
  ASSERT_TRUE(eventually([&] { return of_rank("neutracer_nccl_straggler", *rank1) == 1; }, 5s))
      << log();
  EXPECT_EQ(of_rank("neutracer_nccl_straggler", *rank0), -1);
  EXPECT_GT(of_rank("neutracer_nccl_straggler_wait_share", *rank1), 0.9);
  EXPECT_NE(log().find("nccl_straggler in communicator " + communicator_of(*rank1) +
                       ": rank 1 (neutracer-nccl-, pid " + rank1->pid + ") arrives last"),
            std::string::npos)
      << log();
  command(*rank0, "exit");
  command(*rank1, "exit");
}

// NCCL's RAS service as a stand-in: on 127.0.0.1, answers every connection that asks for STATUS
// with `reply` (a job with one rank answering and one missing), counting the queries, and one
// that asks for MONITOR as NCCL 2.28 does.
class FakeRasServer {
public:
  explicit FakeRasServer(std::string reply) : reply_(std::move(reply)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr *>(&address), sizeof address), 0);
    socklen_t length = sizeof address;
    ::getsockname(listener_, reinterpret_cast<sockaddr *>(&address), &length);
    port_ = ntohs(address.sin_port);
    EXPECT_EQ(::listen(listener_, 8), 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeRasServer() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int queries() const { return queries_; }
  int monitors() const { return monitors_; }

private:
  void serve() {
    while (!stop_) {
      pollfd entry{listener_, POLLIN, 0};
      if (::poll(&entry, 1, 50) <= 0)
        continue;
      const int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0)
        continue;
      std::string received;
      char buffer[256];
      while (received.find("STATUS\n") == std::string::npos &&
             received.find("MONITOR\n") == std::string::npos) {
        const auto n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0)
          break;
        received.append(buffer, static_cast<std::size_t>(n));
      }
      if (received.find("SET FORMAT json\nSTATUS\n") != std::string::npos) {
        ++queries_;
        ::send(fd, reply_.data(), reply_.size(), MSG_NOSIGNAL);
      } else if (received.find("MONITOR\n") != std::string::npos) {
        ++monitors_;
        ::send(fd, kUnknownMonitor.data(), kUnknownMonitor.size(), MSG_NOSIGNAL);
      }
      ::close(fd);
    }
  }

  std::string reply_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> queries_{0};
  std::atomic<int> monitors_{0};
  std::thread thread_;
  // NCCL before 2.29 knows no MONITOR.
  static constexpr std::string_view kUnknownMonitor = "ERROR: Unknown command MONITOR\n";
};

constexpr const char *kRasStatus = R"(OK
{"nccl_version": "2.28.9", "communicators": [
  {"hash": "0xae94423cfbb2ef4a", "secondary_hash": "0x1f2e", "size": 2,
   "ranks": [{"rank": 0, "host": "10.0.0.1", "pid": 4242, "cuda_dev": 0, "nvml_dev": 0,
              "status": {"init_state": 0, "async_error": 0, "abort_flag": false},
              "collective_counts": {"AllReduce": 17}}],
   "missing_ranks": [{"rank": 1, "host": "10.0.0.2", "pid": 4343, "cuda_dev": 0, "nvml_dev": 0
                      "status": {"unresponsive": true, "considered_dead": true}}]}]})";

class NcclRasE2E : public NcclE2E {
protected:
  std::string config_yaml() const override {
    return "nccl: {ras_enabled: true, ras_interval: 10s, ras_timeout: 2s, ras_address: \"" +
           ras_.address() + "\"}\n";
  }
  FakeRasServer ras_{kRasStatus};
};

TEST_F(NcclRasE2E, TheJobsStatusIsAskedOnlyOnceThisNodeRunsNcclAndShownInSeries) {
  auto rank = start_rank("rank0");
  std::this_thread::sleep_for(500ms); // a few scans
  bool other_nccl = false; // another job on this machine would make the daemon ask at once
  for (const auto &[key, sample] : scrape())
    other_nccl = other_nccl || key.starts_with("neutracer_nccl_collectives_total{");
  if (!other_nccl) {
    EXPECT_EQ(ras_.queries(), 0) << "no communicator on this node yet: nobody is asked";
    EXPECT_EQ(value(scrape(), "neutracer_nccl_ras_up", {}), 0);
  }
  ASSERT_EQ(command(*rank, "init jobR 0 2"), "OK init");
  ASSERT_TRUE(eventually([&] { return value(scrape(), "neutracer_nccl_ras_up", {}) == 1; }, 10s))
      << log();
  const auto scraped = scrape();
  if (!other_nccl) {
    EXPECT_EQ(ras_.queries(), 1) << "the next query is 10 s later";
    EXPECT_EQ(value(scraped, "neutracer_nccl_ras_polls_total", {{"result", "ok"}}), 1);
  }
  EXPECT_EQ(value(scraped, "neutracer_nccl_ras_ranks",
                  {{"comm_hash", "0xae94423cfbb2ef4a"}, {"state", "dead"}}),
            1);
  EXPECT_EQ(value(scraped, "neutracer_nccl_ras_missing_rank",
                  {{"rank", "1"}, {"host", "10.0.0.2"}, {"pid", "4343"}, {"dead", "true"}}),
            1);
  EXPECT_EQ(
      value(scraped, "neutracer_nccl_ras_collectives", {{"op", "AllReduce"}, {"bound", "max"}}),
      17);
  EXPECT_NE(log().find("answered: 1 communicators"), std::string::npos) << log();
  // The event stream is asked for once, and not again while this job runs.
  ASSERT_TRUE(
      eventually([&] { return log().find("events unsupported") != std::string::npos; }, 10s))
      << log();
  EXPECT_EQ(value(scrape(), "neutracer_nccl_ras_events_up", {}), 0);
  if (!other_nccl) {
    EXPECT_EQ(ras_.monitors(), 1);
  }
  command(*rank, "exit");
}

} // namespace
} // namespace neutracer::test
