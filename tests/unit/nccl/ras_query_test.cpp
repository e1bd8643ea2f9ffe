// SPDX-License-Identifier: Apache-2.0
#include "nccl/ras_query.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include "loopback_listener.h"

namespace neutracer {
namespace {

using namespace std::chrono_literals;

// A one-connection server on 127.0.0.1 that records what it was sent and answers `reply` (then
// closes), or keeps the connection open without a word when `silent`.
class FakeRas {
public:
  explicit FakeRas(std::string reply, bool silent = false)
      : reply_(std::move(reply)), listener_(1) {
    thread_ = std::thread([this, silent] {
      const int fd = ::accept(listener_.fd(), nullptr, nullptr);
      if (fd < 0)
        return;
      char buffer[256];
      while (received_.find("STATUS\n") == std::string::npos) {
        const auto n = ::recv(fd, buffer, sizeof buffer, 0);
        if (n <= 0)
          break;
        received_.append(buffer, static_cast<std::size_t>(n));
      }
      if (silent)
        std::this_thread::sleep_for(1500ms);
      else
        ::send(fd, reply_.data(), reply_.size(), MSG_NOSIGNAL);
      ::close(fd);
    });
  }
  ~FakeRas() {
    ::shutdown(listener_.fd(), SHUT_RDWR);
    thread_.join();
  }
  std::string address() const { return listener_.address(); }
  const std::string &received() const { return received_; }

private:
  std::string reply_;
  test::LoopbackListener listener_;
  std::string received_;
  std::thread thread_;
};

TEST(RasQuery, AsksForJsonThenStatusAndReadsUntilTheServerCloses) {
  const std::string status = "OK\n{\"communicators\": []}\n";
  RasReply reply;
  std::string received;
  {
    FakeRas server(status);
    reply = query_ras_status(server.address(), 2s);
    std::this_thread::sleep_for(50ms);
    received = server.received();
  }
  EXPECT_TRUE(reply.answered) << reply.error;
  EXPECT_EQ(reply.text, status);
  EXPECT_EQ(received, "SET FORMAT json\nSTATUS\n");
}

TEST(RasQuery, NothingListeningIsRefusedAtOnce) {
  int port = 0;
  {
    FakeRas server(""); // takes a free port, then gives it back
    port = std::stoi(server.address().substr(10));
    query_ras_status(server.address(), 1s);
  }
  const auto started = std::chrono::steady_clock::now();
  const auto reply = query_ras_status("127.0.0.1:" + std::to_string(port), 2s);
  EXPECT_FALSE(reply.answered);
  EXPECT_EQ(reply.error, "Connection refused");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1s);
}

TEST(RasQuery, ASilentServerCostsTheTimeoutAndNoMore) {
  FakeRas server("", /*silent=*/true);
  const auto started = std::chrono::steady_clock::now();
  const auto reply = query_ras_status(server.address(), 300ms);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_FALSE(reply.answered);
  EXPECT_EQ(reply.error, "no full reply before the timeout");
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 1400ms) << "the server would answer after 1.5 s";
}

TEST(RasQuery, AddressesNotHostPortAreRefused) {
  EXPECT_EQ(query_ras_status("28028", 1s).error, "not host:port: 28028");
  EXPECT_EQ(query_ras_status("[::1", 1s).error, "not host:port: [::1");
  EXPECT_EQ(query_ras_status("gpu-node:28028", 1s).error, "not a numeric address: gpu-node:28028");
}

} // namespace
} // namespace neutracer
