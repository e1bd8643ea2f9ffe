// SPDX-License-Identifier: Apache-2.0
#include "http/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <stdexcept>
#include <string>

#include "http_test_client.h"

namespace neutracer {
namespace {

using namespace http_test;

HttpRoutes test_routes(std::atomic<int> *calls = nullptr) {
  HttpRoutes routes;
  routes["/metrics"] = [calls](const std::string &) {
    if (calls)
      ++*calls;
    return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", "up 1\n", {}};
  };
  routes["/kernels"] = [](const std::string &) {
    return HttpResponse{200, "application/json", "{\"k\":1}", {{"X-Test", "yes"}}};
  };
  routes["/fail"] = [](const std::string &) -> HttpResponse { throw std::runtime_error("boom"); };
  routes["/echo"] = [](const std::string &query) {
    return HttpResponse{200, "text/plain", "query=" + query, {}};
  };
  return routes;
}

// ---------------------------------------------------------------------------------------------
// route()

TEST(HttpRoute, GetKnownPath) {
  std::atomic<int> calls = 0;
  const auto routes = test_routes(&calls);
  const auto response = route("GET", "/metrics", routes);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.content_type, "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(response.body, "up 1\n");
  EXPECT_TRUE(response.headers.empty());
  EXPECT_EQ(calls, 1);
}

TEST(HttpRoute, HeadKnownPathRunsHandler) {
  std::atomic<int> calls = 0;
  const auto routes = test_routes(&calls);
  const auto response = route("HEAD", "/metrics", routes);
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "up 1\n"); // the server drops the body, route() does not
  EXPECT_EQ(calls, 1);
  const auto kernels = route("HEAD", "/kernels", routes);
  EXPECT_EQ(kernels.content_type, "application/json");
  EXPECT_EQ(kernels.headers.at("X-Test"), "yes");
}

TEST(HttpRoute, UnknownPathIs404) {
  std::atomic<int> calls = 0;
  const auto routes = test_routes(&calls);
  for (const std::string path : {"/", "/metric", "/metrics/", "/METRICS", "", "/metrics?x=1"}) {
    const auto response = route("GET", path, routes);
    EXPECT_EQ(response.status, 404) << path;
    EXPECT_FALSE(response.body.empty());
  }
  // Unknown path wins over a bad method.
  EXPECT_EQ(route("POST", "/nope", routes).status, 404);
  EXPECT_EQ(calls, 0);
}

TEST(HttpRoute, OtherMethodsAre405WithAllow) {
  std::atomic<int> calls = 0;
  const auto routes = test_routes(&calls);
  for (const std::string method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "get", ""}) {
    const auto response = route(method, "/metrics", routes);
    EXPECT_EQ(response.status, 405) << method;
    ASSERT_TRUE(response.headers.contains("Allow")) << method;
    EXPECT_EQ(response.headers.at("Allow"), "GET, HEAD");
  }
  EXPECT_EQ(calls, 0);
}

TEST(HttpRoute, HandlersReceiveTheQueryString) {
  EXPECT_EQ(route("GET", "/echo", test_routes(), "pid=42&x").body, "query=pid=42&x");
  EXPECT_EQ(route("GET", "/echo", test_routes()).body, "query=");
}

TEST(QueryParameter, FindsNamedValues) {
  EXPECT_EQ(query_parameter("pid=42", "pid"), "42");
  EXPECT_EQ(query_parameter("a=1&pid=7&b", "pid"), "7");
  EXPECT_EQ(query_parameter("a=1&b", "b"), "");
  EXPECT_EQ(query_parameter("apid=1", "pid"), std::nullopt);
  EXPECT_EQ(query_parameter("", "pid"), std::nullopt);
}

TEST(HttpRoute, TemplateSegmentReachesTheHandlerAsAParameter) {
  HttpRoutes routes;
  routes["/items/{id}/parts"] = [](const std::string &query) {
    return HttpResponse{200, "text/plain", query, {}};
  };
  routes["/items/all/parts"] = [](const std::string &) {
    return HttpResponse{200, "text/plain", "exact", {}};
  };
  EXPECT_EQ(route("GET", "/items/42/parts", routes).body, "id=42");
  // The path's value comes first: a query cannot override it.
  EXPECT_EQ(route("GET", "/items/42/parts", routes, "id=7&x=1").body, "id=42&id=7&x=1");
  EXPECT_EQ(query_parameter(route("GET", "/items/42/parts", routes, "id=7").body, "id"), "42");
  EXPECT_EQ(route("GET", "/items/all/parts", routes).body, "exact");
  const auto match = match_route("/items/9/parts", routes);
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(*match->key, "/items/{id}/parts");
  // One non-empty segment of plain characters, nothing else.
  for (const std::string path : {"/items//parts", "/items/1/2/parts", "/items/a&b=c/parts",
                                 "/items/1%2f2/parts", "/items/42/parts/", "/items/42"})
    EXPECT_EQ(route("GET", path, routes).status, 404) << path;
}

TEST(HttpRoute, NoRoutes) { EXPECT_EQ(route("GET", "/metrics", {}).status, 404); }

// ---------------------------------------------------------------------------------------------
// A real server on 127.0.0.1

// One server for the whole suite: stopping a civetweb server takes about two seconds.
class HttpServerTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    port_ = free_port();
    if (port_ > 0)
      server_ = new HttpServer("127.0.0.1:" + std::to_string(port_), test_routes(&calls_));
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_GT(port_, 0);
    ASSERT_NE(server_, nullptr);
    calls_at_start_ = calls_.load();
  }
  // Handler calls made by this test.
  int calls() const { return calls_.load() - calls_at_start_; }

  static inline int port_ = -1;
  static inline std::atomic<int> calls_ = 0;
  static inline HttpServer *server_ = nullptr;
  int calls_at_start_ = 0;
};

TEST_F(HttpServerTest, GetMetrics) {
  const auto response = http_exchange(port_, get("/metrics"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(status_line(*response), "HTTP/1.1 200 OK");
  EXPECT_EQ(header(*response, "Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(header(*response, "Content-Length"), "5");
  EXPECT_EQ(header(*response, "Cache-Control"), "no-store");
  EXPECT_EQ(body(*response), "up 1\n");
  EXPECT_EQ(calls(), 1);
}

TEST_F(HttpServerTest, ExtraHeadersAndJson) {
  const auto response = http_exchange(port_, get("/kernels"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(status_line(*response), "HTTP/1.1 200 OK");
  EXPECT_EQ(header(*response, "Content-Type"), "application/json");
  EXPECT_EQ(header(*response, "X-Test"), "yes");
  EXPECT_EQ(body(*response), "{\"k\":1}");
}

TEST_F(HttpServerTest, HeadHasNoBody) {
  const auto response = http_exchange(port_, get("/metrics", "HEAD"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(status_line(*response), "HTTP/1.1 200 OK");
  EXPECT_EQ(header(*response, "Content-Length"), "5");
  EXPECT_EQ(body(*response), "");
}

TEST_F(HttpServerTest, NotFoundAndMethodNotAllowed) {
  const auto missing = http_exchange(port_, get("/nope"));
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(status_line(*missing), "HTTP/1.1 404 Not Found");
  const auto post = http_exchange(port_, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: "
                                         "2\r\nConnection: close\r\n\r\nhi");
  ASSERT_TRUE(post.has_value());
  EXPECT_EQ(status_line(*post), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_EQ(header(*post, "Allow"), "GET, HEAD");
  EXPECT_EQ(calls(), 0);
}

TEST_F(HttpServerTest, HandlerExceptionIs500) {
  const auto response = http_exchange(port_, get("/fail"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(status_line(*response), "HTTP/1.1 500 Internal Server Error");
  // The server survives.
  const auto again = http_exchange(port_, get("/metrics"));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(status_line(*again), "HTTP/1.1 200 OK");
}

TEST_F(HttpServerTest, QueryStringIsNotPartOfThePath) {
  const auto response = http_exchange(port_, get("/metrics?name[]=x"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(status_line(*response), "HTTP/1.1 200 OK");
}

TEST_F(HttpServerTest, QueryStringReachesTheHandler) {
  const auto response = http_exchange(port_, get("/echo?pid=42"));
  ASSERT_TRUE(response);
  EXPECT_NE(response->find("query=pid=42"), std::string::npos) << *response;
}

TEST_F(HttpServerTest, OversizedRequestLineIsRefused) {
  const std::string request = "GET /metrics?" + std::string(20 * 1024, 'a') +
                              " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  const auto response = http_exchange(port_, request);
  if (response.has_value() && !response->empty()) {
    const auto line = status_line(*response);
    ASSERT_GE(line.size(), 12u) << line;
    EXPECT_EQ(line[9], '4') << "expected a 4xx, got: " << line;
  } // else: the server closed the connection without answering, which is also acceptable.
  EXPECT_EQ(calls(), 0);
  // Still serving.
  const auto normal = http_exchange(port_, get("/metrics"));
  ASSERT_TRUE(normal.has_value());
  EXPECT_EQ(status_line(*normal), "HTTP/1.1 200 OK");
  EXPECT_EQ(body(*normal), "up 1\n");
}

TEST_F(HttpServerTest, KeepAliveServesTwoRequests) {
  const Socket socket = connect_to(port_);
  ASSERT_TRUE(socket.valid());
  const std::string keep = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(send_all(socket, keep + get("/kernels")));
  const std::string both = read_all(socket);
  EXPECT_EQ(both.find("HTTP/1.1 200 OK"), 0u);
  EXPECT_NE(both.find("up 1\n"), std::string::npos);
  EXPECT_NE(both.find("{\"k\":1}"), std::string::npos);
}

TEST_F(HttpServerTest, SecondServerOnSamePortThrows) {
  EXPECT_THROW(HttpServer("127.0.0.1:" + std::to_string(port_), test_routes()), HttpError);
  try {
    HttpServer second("127.0.0.1:" + std::to_string(port_), test_routes());
    ADD_FAILURE() << "second server started";
  } catch (const HttpError &error) {
    EXPECT_NE(std::string(error.what()).find(std::to_string(port_)), std::string::npos)
        << error.what();
  }
  // The first server is unaffected by the failed start.
  const auto response = http_exchange(port_, get("/metrics"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(status_line(*response), "HTTP/1.1 200 OK");
}

TEST(HttpServer, LocalhostIsAccepted) {
  const int port = free_port();
  ASSERT_GT(port, 0);
  HttpServer server("localhost:" + std::to_string(port), test_routes());
  const auto response = http_exchange(port, get("/metrics"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(status_line(*response), "HTTP/1.1 200 OK");
}

TEST(HttpServer, BadListenAddressThrows) {
  EXPECT_THROW(HttpServer("not-an-address:99999", test_routes()), HttpError);
}

TEST(HttpServer, StopsListeningWhenDestroyed) {
  const int port = free_port();
  ASSERT_GT(port, 0);
  {
    HttpServer server("127.0.0.1:" + std::to_string(port), test_routes());
    ASSERT_TRUE(http_exchange(port, get("/metrics")).has_value());
  }
  EXPECT_FALSE(connect_to(port).valid()) << "port still accepting after the server was destroyed";
  // And the port can be used again.
  HttpServer again("127.0.0.1:" + std::to_string(port), test_routes());
  const auto response = http_exchange(port, get("/metrics"));
  ASSERT_TRUE(response.has_value());
  EXPECT_EQ(status_line(*response), "HTTP/1.1 200 OK");
}

} // namespace
} // namespace neutracer
