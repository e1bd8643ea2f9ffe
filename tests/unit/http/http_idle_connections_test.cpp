// SPDX-License-Identifier: Apache-2.0
// Many connections that send nothing, or their request one byte at a time (slowloris), against
// a real HttpServer with its default limits: a scrape and /healthz still answer at once. civetweb
// gives every connection a worker thread until the request is complete or request_timeout (10 s)
// passes, so this holds while the open connections number fewer than max_connections.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "http/http_server.h"
#include "http_test_client.h"

namespace neutracer {
namespace {

using namespace http_test;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kHeldSockets = 200;

class IdleConnectionsTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    port_ = free_port();
    HttpServerOptions options; // the daemon's defaults: 10 s to send a request, 4 requests
    options.listen = "127.0.0.1:" + std::to_string(port_);
    HttpRoutes routes;
    routes["/metrics"] = [](const std::string &) {
      return HttpResponse{200, "text/plain; version=0.0.4", "up 1\n", {}};
    };
    routes["/healthz"] = [](const std::string &) {
      return HttpResponse{200, "text/plain", "ok\n", {}};
    };
    server_ = std::make_unique<HttpServer>(options, routes);
  }
  static void TearDownTestSuite() { server_.reset(); }

  static std::vector<Socket> open_sockets(const std::string &first_bytes) {
    std::vector<Socket> sockets;
    for (int i = 0; i < kHeldSockets; ++i) {
      sockets.push_back(connect_to(port_));
      EXPECT_TRUE(sockets.back().valid()) << "connection " << i;
      if (!first_bytes.empty()) {
        EXPECT_TRUE(send_all(sockets.back(), first_bytes));
      }
    }
    // Long enough for civetweb to accept them all and hand each to a worker.
    std::this_thread::sleep_for(300ms);
    return sockets;
  }

  // A scrape and a /healthz probe, three times over: each answers 200 within 1 s (a worker
  // free at once answers in about a millisecond; waiting for one takes up to 10 s).
  static void expect_answers_at_once() {
    for (int round = 0; round < 3; ++round)
      for (const char *path : {"/metrics", "/healthz"}) {
        const auto start = Clock::now();
        const auto response = http_exchange(port_, get(path));
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        ASSERT_TRUE(response.has_value()) << path;
        EXPECT_EQ(status_code(*response), 200) << path;
        EXPECT_LT(seconds, 1.0) << path << " waited behind the held connections";
      }
  }

  static inline int port_ = -1;
  static inline std::unique_ptr<HttpServer> server_;
};

TEST_F(IdleConnectionsTest, TwoHundredSilentConnectionsDelayNeitherScrapesNorHealthz) {
  const auto held = open_sockets("");
  expect_answers_at_once();
}

TEST_F(IdleConnectionsTest, TwoHundredSlowlorisConnectionsDelayNeitherScrapesNorHealthz) {
  auto held = open_sockets("GET /metrics HTTP/1.1\r\nHost: x\r\n");
  // One more header byte on every connection every 200 ms while the scrapes run.
  std::jthread dribbler([&held](std::stop_token stop) {
    while (!stop.stop_requested()) {
      for (const Socket &socket : held)
        send_all(socket, "X");
      std::this_thread::sleep_for(200ms);
    }
  });
  expect_answers_at_once();
}

} // namespace
} // namespace neutracer
