// SPDX-License-Identifier: Apache-2.0
// The endpoint against hostile and broken clients, over raw TCP to a real HttpServer on
// 127.0.0.1: oversized and malformed requests get 4xx, slow clients and request bursts never
// block a scrape, basic authentication answers 401, and the server keeps serving throughout.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "http/bcrypt.h"
#include "http/http_rejections.h"
#include "http/http_server.h"
#include "http_test_client.h"

namespace neutracer {
namespace {

using namespace http_test;
using namespace std::chrono_literals;
using namespace std::string_literals;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Holds /slow requests inside their handler until opened.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = true;
  int inside = 0;

  void pass() {
    std::unique_lock lock(mutex);
    ++inside;
    changed.notify_all();
    changed.wait_for(lock, 10s, [this] { return open; });
    --inside;
  }
  bool wait_inside(int count) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 5s, [&] { return inside == count; });
  }
  void set_open(bool value) {
    std::lock_guard lock(mutex);
    open = value;
    changed.notify_all();
  }
};

HttpRoutes routes(Gate &gate) {
  HttpRoutes routes;
  routes["/metrics"] = [](const std::string &) {
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", "up 1\n", {}};
  };
  routes["/healthz"] = [](const std::string &) {
    return HttpResponse{200, "text/plain", "ok\n", {}};
  };
  routes["/slow"] = [&gate](const std::string &) {
    gate.pass();
    return HttpResponse{200, "text/plain", "slow\n", {}};
  };
  return routes;
}

// A server shared by the suite (stopping one takes about two seconds): at most 2 requests at
// once, and 1 s for a client to send its request.
class HostileClientTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    port_ = free_port();
    HttpServerOptions options;
    options.listen = "127.0.0.1:" + std::to_string(port_);
    options.max_concurrent_requests = 2;
    options.request_timeout = 1000ms;
    server_ = std::make_unique<HttpServer>(options, routes(gate_));
  }
  static void TearDownTestSuite() { server_.reset(); }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    for (RejectionReason reason : kRejectionReasons)
      at_start_[static_cast<std::size_t>(reason)] = server_->rejections().value(reason);
  }
  // Each test ends with the server still answering a plain scrape.
  void TearDown() override { expect_metrics_served(); }

  static void expect_metrics_served() {
    const auto response = http_exchange(port_, get("/metrics"));
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(status_line(*response), "HTTP/1.1 200 OK");
    EXPECT_EQ(body(*response), "up 1\n");
  }
  // Refusals counted since the test started.
  std::uint64_t rejected(RejectionReason reason) const {
    return server_->rejections().value(reason) - at_start_[static_cast<std::size_t>(reason)];
  }
  // Sends raw bytes and returns the status code of the answer (0: closed without one).
  static int status_of(const std::string &request) {
    const auto response = http_exchange(port_, request);
    return response ? status_code(*response) : 0;
  }

  static inline int port_ = -1;
  static inline Gate gate_;
  static inline std::unique_ptr<HttpServer> server_;
  std::uint64_t at_start_[kRejectionReasons.size()] = {};
};

TEST_F(HostileClientTest, OneMebibyteHeaderIsRefused) {
  const std::string request =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(1 << 20, 'a') +
      "\r\nConnection: close\r\n\r\n";
  const int status = status_of(request);
  // Beyond its 64 KiB buffer civetweb answers a plain 400 and closes; the client may still be
  // sending and then see a reset instead of the answer.
  EXPECT_TRUE(status == 400 || status == 0) << status;
  EXPECT_EQ(rejected(RejectionReason::bad_request), 1u);
}

TEST_F(HostileClientTest, HeadersOverSixteenKibibytesAre431) {
  const auto response =
      http_exchange(port_, get("/metrics", "GET", "X-Big: " + std::string(20000, 'a') + "\r\n"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(status_line(*response), "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_EQ(body(*response).find("up 1"), std::string::npos);
  EXPECT_EQ(rejected(RejectionReason::too_large), 1u);
}

TEST_F(HostileClientTest, LongRequestLineIs431) {
  EXPECT_EQ(status_of(get("/metrics?" + std::string(20000, 'q'))), 431);
  EXPECT_EQ(rejected(RejectionReason::too_large), 1u);
}

TEST_F(HostileClientTest, TooManyHeadersAre431) {
  std::string headers;
  for (int i = 0; i < 200; ++i)
    headers += "X-H" + std::to_string(i) + ": v\r\n";
  EXPECT_EQ(status_of(get("/metrics", "GET", headers)), 431);
  EXPECT_EQ(rejected(RejectionReason::too_large), 1u);
}

TEST_F(HostileClientTest, GarbageRequestLineIs400) {
  EXPECT_EQ(status_of("\x01\x02\x03 garbage \xff\xfe\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET metrics HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET /me\0trics HTTP/1.1\r\nHost: x\r\n\r\n"s), 400);
  EXPECT_EQ(rejected(RejectionReason::bad_request), 4u);
}

TEST_F(HostileClientTest, ABareCrInTheRequestLineOrAHeaderLineIs400) {
  // civetweb ends the version at a bare CR and skips on: the first would reach /metrics with a
  // header X-Injected. (Two CRs, "\r\r", are two bytes like CR LF once civetweb has zeroed
  // them in place: that one case still passes, as a request line ended by a blank.)
  for (const std::string &request :
       {"GET /metrics HTTP/1.1\rX-Injected: 1\r\nHost: x\r\nConnection: close\r\n\r\n"s,
        "GET /metrics HTTP/1.1\r\r\nHost: x\r\nConnection: close\r\n\r\n"s,
        "GET /healthz HTTP/1.1\rHost: x\r\nConnection: close\r\n\r\n"s,
        "GET /metrics HTTP/1.1\r\nHost: x\rX-Injected: 1\r\nConnection: close\r\n\r\n"s}) {
    const auto response = http_exchange(port_, request);
    ASSERT_TRUE(response.has_value()) << request;
    EXPECT_EQ(status_code(*response), 400) << request;
    EXPECT_EQ(body(*response).find("up 1"), std::string::npos) << request << " reached /metrics";
  }
  EXPECT_EQ(rejected(RejectionReason::bad_request), 4u);
  EXPECT_EQ(status_of(get("/metrics")), 200) << "CR LF throughout still passes";
}

TEST_F(HostileClientTest, BadMethodsAreRefused) {
  EXPECT_EQ(status_of(get("/metrics", "FOO")), 400);    // civetweb knows no such method
  EXPECT_EQ(status_of(get("/metrics", "get")), 400);    // methods are case-sensitive
  EXPECT_EQ(status_of(get("/metrics", "DELETE")), 405); // a real method this path refuses
  EXPECT_EQ(status_of(get("/metrics", "OPTIONS")), 405);
}

TEST_F(HostileClientTest, DotSegmentsAndEncodedJunkInPathsAre400) {
  for (const std::string path : {"/a/../metrics", "/../metrics", "/%2e%2e/metrics",
                                 "/metrics%00junk", "/metrics%2fx", "/%zz", "/./metrics"}) {
    const auto response = http_exchange(port_, get(path));
    ASSERT_TRUE(response.has_value()) << path;
    EXPECT_EQ(status_code(*response), 400) << path;
    EXPECT_EQ(body(*response).find("up 1"), std::string::npos) << path << " reached /metrics";
  }
  EXPECT_EQ(rejected(RejectionReason::bad_request), 7u);
}

TEST_F(HostileClientTest, BodyOnGetIs400) {
  EXPECT_EQ(status_of("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: "
                      "close\r\n\r\nhello"),
            400);
  EXPECT_EQ(status_of("GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                      "Connection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
            400);
  // A body announced but never sent: refused without waiting for it.
  const auto start = Clock::now();
  EXPECT_EQ(status_of("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n"),
            400);
  EXPECT_LT(seconds_since(start), 3.0);
  EXPECT_EQ(rejected(RejectionReason::bad_request), 3u);
}

TEST_F(HostileClientTest, HttpVersionOtherThan1xIsRefused) {
  const int status = status_of("GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n");
  EXPECT_EQ(status, 505);
  EXPECT_EQ(rejected(RejectionReason::bad_request), 1u);
}

TEST_F(HostileClientTest, SlowClientDoesNotBlockAScrapeAndIsCutOff) {
  const Socket slow = connect_to(port_, 10);
  ASSERT_TRUE(slow.valid());
  ASSERT_TRUE(send_all(slow, "GET /metrics HTTP/1.1\r\nHost: x\r\n"));
  // Keeps dribbling one header byte every 200 ms until the server hangs up.
  std::promise<double> cut_after;
  std::jthread dribbler([&] {
    const auto start = Clock::now();
    while (seconds_since(start) < 8 && send_all(slow, "X"))
      std::this_thread::sleep_for(200ms);
    cut_after.set_value(seconds_since(start));
  });
  std::this_thread::sleep_for(300ms);
  const auto scrape_start = Clock::now();
  expect_metrics_served();
  const double scrape_seconds = seconds_since(scrape_start);
  EXPECT_LT(scrape_seconds, 0.5) << "a slow client delayed a parallel scrape";
  const double cut = cut_after.get_future().get();
  // request_timeout is 1 s; the first write after the close may still succeed.
  EXPECT_LT(cut, 4.0) << "the slow client was never cut off";
  RecordProperty("parallel_scrape_ms", static_cast<int>(scrape_seconds * 1000));
  RecordProperty("slow_client_cut_after_ms", static_cast<int>(cut * 1000));
}

TEST_F(HostileClientTest, IdleConnectionDoesNotBlockAScrape) {
  std::vector<Socket> idle;
  for (int i = 0; i < 3; ++i)
    idle.push_back(connect_to(port_));
  std::this_thread::sleep_for(100ms);
  const auto start = Clock::now();
  expect_metrics_served();
  EXPECT_LT(seconds_since(start), 0.5);
}

TEST_F(HostileClientTest, RequestsOverTheLimitGet503AtOnce) {
  gate_.set_open(false);
  std::vector<std::future<std::optional<std::string>>> slow;
  for (int i = 0; i < 2; ++i)
    slow.push_back(
        std::async(std::launch::async, [] { return http_exchange(port_, get("/slow")); }));
  ASSERT_TRUE(gate_.wait_inside(2)) << "the two slow requests never reached their handler";
  const auto start = Clock::now();
  const auto refused = http_exchange(port_, get("/metrics"));
  const double refused_seconds = seconds_since(start);
  gate_.set_open(true);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(status_line(*refused), "HTTP/1.1 503 Service Unavailable");
  EXPECT_LT(refused_seconds, 0.5) << "the refusal waited behind the slow requests";
  for (auto &request : slow) {
    const auto response = request.get();
    ASSERT_TRUE(response.has_value());
    EXPECT_EQ(status_code(*response), 200);
  }
  EXPECT_EQ(rejected(RejectionReason::concurrency), 1u);
  RecordProperty("refusal_ms", static_cast<int>(refused_seconds * 1000));
}

TEST_F(HostileClientTest, NoClientBytesReachTheStatusLineOrHeaders) {
  // civetweb's own error page began "HTTP/" + the client's version token: with a bare CR after
  // the path, "Set-Cookie: x" became a header of the answer.
  const std::regex status_line_format("HTTP/1\\.1 [0-9]{3} [A-Za-z ]+");
  const std::regex header_format("(Content-Type|Content-Length|Cache-Control|Connection): [ -~]+");
  for (const std::string &request :
       {"GET / \rSet-Cookie: x\r\n\r\n"s, "GET / \rSet-Cookie: x\r\nHost: y\r\n\r\n"s,
        "GET / HTTP/1.1\x85Set-Cookie:x\r\n\r\n"s, "GET / Set-Cookie:x\r\n\r\n"s,
        "GET / HTTP/1.1\rSet-Cookie: x\r\n\r\n"s, "GET / FOO/1.1\r\n\r\n"s,
        "GET / HTTP/\rSet-Cookie:x\r\n\r\n"s, "GET /\rSet-Cookie: x HTTP/1.1\r\n\r\n"s,
        "GET / HTTP/9.9\rSet-Cookie: x\r\n\r\n"s}) {
    const auto response = http_exchange(port_, request);
    ASSERT_TRUE(response.has_value()) << request;
    const std::string head = response->substr(0, response->find("\r\n\r\n"));
    EXPECT_EQ(head.find("Set-Cookie"), std::string::npos) << head;
    EXPECT_EQ(head.find("FOO"), std::string::npos) << head;
    std::size_t at = 0;
    bool first = true;
    while (at <= head.size()) {
      const std::size_t end = std::min(head.find("\r\n", at), head.size());
      const std::string line = head.substr(at, end - at);
      EXPECT_TRUE(std::regex_match(line, first ? status_line_format : header_format))
          << "line [" << line << "] of the answer to [" << request << "]";
      first = false;
      at = end + 2;
    }
  }
}

TEST_F(HostileClientTest, ManyMalformedRequestsInARowLeaveTheServerServing) {
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(status_of("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n"s), 400)
        << i; // TLS hello
    EXPECT_EQ(status_of(get("/" + std::string(i, '.'))), i == 1 || i == 2 ? 400 : 404) << i;
  }
}

// ---- basic authentication over the wire ------------------------------------------------------

class AuthenticatedServerTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    port_ = free_port();
    HttpServerOptions options;
    options.listen = "127.0.0.1:" + std::to_string(port_);
    // Cost 10, as htpasswd -B writes by default: what a real scrape would pay uncached.
    options.basic_auth_users = {{"prometheus", bcrypt_hash("scrape-secret", 10)}};
    options.public_paths = {"/healthz"};
    server_ = std::make_unique<HttpServer>(options, routes(gate_));
  }
  static void TearDownTestSuite() { server_.reset(); }
  std::uint64_t unauthorized() const {
    return server_->rejections().value(RejectionReason::unauthorized);
  }
  static std::string with_authorization(const std::string &path, const std::string &value) {
    return get(path, "GET", "Authorization: " + value + "\r\n");
  }

  static inline int port_ = -1;
  static inline Gate gate_;
  static inline std::unique_ptr<HttpServer> server_;
};

// "prometheus:scrape-secret", "prometheus:wrong" and "nobody:scrape-secret" in base64.
constexpr const char *kGood = "Basic cHJvbWV0aGV1czpzY3JhcGUtc2VjcmV0";
constexpr const char *kWrongPassword = "Basic cHJvbWV0aGV1czp3cm9uZw==";
constexpr const char *kUnknownUser = "Basic bm9ib2R5OnNjcmFwZS1zZWNyZXQ=";

TEST_F(AuthenticatedServerTest, NoCredentialsIs401WithAChallenge) {
  const auto before = unauthorized();
  const auto response = http_exchange(port_, get("/metrics"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(status_line(*response), "HTTP/1.1 401 Unauthorized");
  EXPECT_EQ(header(*response, "WWW-Authenticate"), "Basic realm=\"neutracerd\"");
  EXPECT_EQ(body(*response).find("up 1"), std::string::npos);
  EXPECT_EQ(unauthorized(), before + 1);
}

TEST_F(AuthenticatedServerTest, WrongPasswordAndUnknownUserLookTheSame) {
  const auto wrong = http_exchange(port_, with_authorization("/metrics", kWrongPassword));
  const auto unknown = http_exchange(port_, with_authorization("/metrics", kUnknownUser));
  const auto garbage = http_exchange(port_, with_authorization("/metrics", "Basic !!"));
  ASSERT_TRUE(wrong && unknown && garbage);
  EXPECT_EQ(*wrong, *unknown);
  EXPECT_EQ(*wrong, *garbage);
  EXPECT_EQ(status_code(*wrong), 401);
}

TEST_F(AuthenticatedServerTest, RightPasswordIsServedAndThenCached) {
  const auto first_start = Clock::now();
  const auto first = http_exchange(port_, with_authorization("/metrics", kGood));
  const double first_ms = seconds_since(first_start) * 1000;
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(status_line(*first), "HTTP/1.1 200 OK");
  EXPECT_EQ(body(*first), "up 1\n");
  const auto again_start = Clock::now();
  for (int i = 0; i < 10; ++i) {
    const auto again = http_exchange(port_, with_authorization("/metrics", kGood));
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(status_code(*again), 200);
  }
  const double cached_ms = seconds_since(again_start) * 100; // per request
  RecordProperty("first_authenticated_ms", static_cast<int>(first_ms));
  RecordProperty("cached_authenticated_us", static_cast<int>(cached_ms * 1000));
  std::printf("first authenticated scrape %.1f ms, cached %.3f ms\n", first_ms, cached_ms);
}

TEST_F(AuthenticatedServerTest, HealthzNeedsNoCredentials) {
  const auto before = unauthorized();
  const auto response = http_exchange(port_, get("/healthz"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(status_line(*response), "HTTP/1.1 200 OK");
  EXPECT_EQ(body(*response), "ok\n");
  EXPECT_EQ(unauthorized(), before);
}

TEST_F(AuthenticatedServerTest, PasswordGuessingFloodLeavesScrapesAndHealthzServed) {
  ASSERT_EQ(status_code(*http_exchange(port_, with_authorization("/metrics", kGood))), 200);
  // 16 clients guess passwords as fast as they are answered; each guess costs a bcrypt.
  std::atomic<bool> stop = false;
  std::atomic<int> guesses = 0, refused_401 = 0, busy_429 = 0;
  std::vector<std::jthread> guessers;
  for (int i = 0; i < 16; ++i)
    guessers.emplace_back([&] {
      while (!stop) {
        const auto response = http_exchange(port_, with_authorization("/metrics", kWrongPassword));
        const int status = response ? status_code(*response) : 0;
        if (status == 401)
          ++refused_401;
        else if (status == 429)
          ++busy_429;
        ++guesses;
      }
    });
  const auto flood_start = Clock::now();
  while (guesses < 16 && seconds_since(flood_start) < 5)
    std::this_thread::sleep_for(10ms);
  std::vector<int> scrapes, probes;
  double slowest = 0;
  for (int i = 0; i < 10; ++i) {
    const auto start = Clock::now();
    const auto scrape = http_exchange(port_, with_authorization("/metrics", kGood));
    const auto probe = http_exchange(port_, get("/healthz"));
    slowest = std::max(slowest, seconds_since(start));
    scrapes.push_back(scrape ? status_code(*scrape) : 0);
    probes.push_back(probe ? status_code(*probe) : 0);
    std::this_thread::sleep_for(50ms);
  }
  stop = true;
  guessers.clear();
  EXPECT_EQ(scrapes, std::vector<int>(10, 200)) << "a cached scrape was refused during the flood";
  EXPECT_EQ(probes, std::vector<int>(10, 200)) << "/healthz was refused during the flood";
  EXPECT_LT(slowest, 1.0) << "a scrape and probe waited behind the guesses";
  EXPECT_GT(refused_401, 0) << "no guess was ever checked";
  // Guesses wait their turn for the bcrypt slot (429 only past a 5 s wait or a full queue).
  RecordProperty("slowest_scrape_and_probe_ms", static_cast<int>(slowest * 1000));
  RecordProperty("guesses_refused_busy", busy_429.load());
}

TEST(HttpServerOptionsTest, BadUsersAreAnHttpErrorBeforeListening) {
  HttpServerOptions options;
  const int port = free_port();
  options.listen = "127.0.0.1:" + std::to_string(port);
  options.basic_auth_users = {{"u", "plaintext"}};
  Gate gate;
  try {
    HttpServer server(options, routes(gate));
    ADD_FAILURE() << "a plaintext password was accepted";
  } catch (const HttpError &error) {
    EXPECT_NE(std::string(error.what()).find("not a bcrypt hash"), std::string::npos)
        << error.what();
    EXPECT_EQ(std::string(error.what()).find("plaintext"), std::string::npos) << error.what();
  }
  EXPECT_FALSE(connect_to(port).valid()) << "the port was bound anyway";
}

} // namespace
} // namespace neutracer
