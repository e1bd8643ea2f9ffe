// SPDX-License-Identifier: Apache-2.0
// RequestPipeline without sockets: the order of checks and what each refusal looks like.
#include "http/request_pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "held_password_check.h"
#include "http/basic_auth.h"
#include "http/bcrypt.h"

namespace neutracer {
namespace {

struct PipelineTest : ::testing::Test {
  HttpRoutes routes() {
    HttpRoutes routes;
    routes["/metrics"] = [this](const std::string &) {
      ++handler_calls;
      return HttpResponse{200, "text/plain", "up 1\n", {}};
    };
    routes["/healthz"] = [](const std::string &) {
      return HttpResponse{200, "text/plain", "ok\n", {}};
    };
    routes["/fail"] = [](const std::string &) -> HttpResponse { throw std::runtime_error("boom"); };
    return routes;
  }

  std::unique_ptr<RequestPipeline> pipeline(std::uint32_t limit, bool with_auth) {
    std::unique_ptr<BasicAuthenticator> authenticator;
    if (with_auth)
      authenticator = std::make_unique<BasicAuthenticator>(
          std::map<std::string, std::string>{{"prometheus", bcrypt_hash("pw", 4)}});
    return std::make_unique<RequestPipeline>(routes(), limit, std::move(authenticator),
                                             std::set<std::string>{"/healthz"}, rejections);
  }

  static HttpRequest request(std::string path, std::string method = "GET") {
    HttpRequest request;
    request.method = std::move(method);
    request.raw_path = std::move(path);
    return request;
  }

  static HttpResponse serve(RequestPipeline &pipeline, const HttpRequest &request) {
    HttpResponse out{0, "", "", {}};
    int sends = 0;
    pipeline.serve(request, [&](const HttpResponse &response) {
      out = response;
      ++sends;
    });
    EXPECT_EQ(sends, 1);
    return out;
  }

  std::uint64_t rejected(RejectionReason reason) const { return rejections->value(reason); }

  std::shared_ptr<HttpRejectionCounters> rejections = std::make_shared<HttpRejectionCounters>();
  std::atomic<int> handler_calls = 0;
};

TEST_F(PipelineTest, ServesARoute) {
  auto open = pipeline(4, false);
  const auto response = serve(*open, request("/metrics"));
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "up 1\n");
  EXPECT_EQ(handler_calls, 1);
  EXPECT_EQ(serve(*open, request("/nope")).status, 404);
  EXPECT_EQ(serve(*open, request("/metrics", "DELETE")).status, 405);
  for (RejectionReason reason : kRejectionReasons)
    EXPECT_EQ(rejected(reason), 0u) << "404 and 405 are answers, not refusals";
}

TEST_F(PipelineTest, BadPathsAndBodiesAre400BeforeAnythingElse) {
  auto guarded = pipeline(4, true);
  auto dotted = request("/a/../metrics");
  const auto response = serve(*guarded, dotted);
  EXPECT_EQ(response.status, 400);
  EXPECT_NE(response.body.find("'..'"), std::string::npos) << response.body;
  auto with_body = request("/metrics");
  with_body.content_length = 5;
  EXPECT_EQ(serve(*guarded, with_body).status, 400);
  auto chunked = request("/metrics");
  chunked.has_transfer_encoding = true;
  EXPECT_EQ(serve(*guarded, chunked).status, 400);
  EXPECT_EQ(serve(*guarded, request("/metrics%00")).status, 400);
  EXPECT_EQ(rejected(RejectionReason::bad_request), 4u);
  EXPECT_EQ(rejected(RejectionReason::unauthorized), 0u);
  EXPECT_EQ(handler_calls, 0);
}

TEST_F(PipelineTest, OversizedHeadIs431) {
  auto guarded = pipeline(4, true);
  auto large = request("/metrics");
  large.head_bytes = 20000;
  const auto response = serve(*guarded, large);
  EXPECT_EQ(response.status, 431);
  EXPECT_NE(response.body.find("too large"), std::string::npos);
  auto crowded = request("/metrics");
  crowded.header_count = 64;
  EXPECT_EQ(serve(*guarded, crowded).status, 431);
  EXPECT_EQ(rejected(RejectionReason::too_large), 2u);
  EXPECT_EQ(rejected(RejectionReason::unauthorized), 0u);
}

TEST_F(PipelineTest, OverTheLimitIs503WhileOthersRun) {
  auto limited = pipeline(1, false);
  HttpResponse inner{0, "", "", {}};
  // The outer request holds the only slot while its response is being sent.
  const auto outer = request("/metrics");
  limited->serve(outer,
                 [&](const HttpResponse &) { inner = serve(*limited, request("/metrics")); });
  EXPECT_EQ(inner.status, 503);
  EXPECT_EQ(rejected(RejectionReason::concurrency), 1u);
  EXPECT_EQ(handler_calls, 1) << "the refused request never reached its handler";
  // The slot is free again afterwards.
  EXPECT_EQ(serve(*limited, request("/metrics")).status, 200);
}

TEST_F(PipelineTest, AuthenticationGuardsAllButPublicPaths) {
  auto guarded = pipeline(4, true);
  const auto refused = serve(*guarded, request("/metrics"));
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.headers.at("WWW-Authenticate"), "Basic realm=\"neutracerd\"");
  // Unknown paths too: an unauthenticated client learns nothing about what exists.
  EXPECT_EQ(serve(*guarded, request("/nope")).status, 401);
  EXPECT_EQ(handler_calls, 0);

  auto wrong = request("/metrics");
  wrong.authorization = "Basic cHJvbWV0aGV1czpub3Bl"; // prometheus:nope
  const auto wrong_response = serve(*guarded, wrong);
  auto unknown = request("/metrics");
  unknown.authorization = "Basic bm9ib2R5OnB3"; // nobody:pw
  const auto unknown_response = serve(*guarded, unknown);
  // Wrong password and unknown user look the same.
  EXPECT_EQ(wrong_response.status, 401);
  EXPECT_EQ(wrong_response.body, unknown_response.body);
  EXPECT_EQ(wrong_response.headers, unknown_response.headers);
  EXPECT_EQ(rejected(RejectionReason::unauthorized), 4u);

  auto good = request("/metrics");
  good.authorization = "Basic cHJvbWV0aGV1czpwdw=="; // prometheus:pw
  EXPECT_EQ(serve(*guarded, good).status, 200);
  EXPECT_EQ(handler_calls, 1);

  EXPECT_EQ(serve(*guarded, request("/healthz")).status, 200);
  EXPECT_EQ(rejected(RejectionReason::unauthorized), 4u);
}

TEST_F(PipelineTest, ARequestLineNotEndingInCrLfIs400EvenForPublicPaths) {
  auto open = pipeline(4, false);
  for (const char *path : {"/metrics", "/healthz"}) {
    auto bare_cr = request(path);
    bare_cr.request_line_terminator_bytes = 1;
    const auto response = serve(*open, bare_cr);
    EXPECT_EQ(response.status, 400) << path;
    EXPECT_EQ(response.body, "bad request: the request line must end with CR LF\n");
  }
  EXPECT_EQ(handler_calls, 0);
  EXPECT_EQ(rejected(RejectionReason::bad_request), 2u);
  auto crlf = request("/metrics");
  crlf.request_line_terminator_bytes = 2;
  EXPECT_EQ(serve(*open, crlf).status, 200);
}

TEST_F(PipelineTest, HealthzNeedsNoSlot) {
  auto limited = pipeline(1, true);
  HttpResponse inner{0, "", "", {}};
  auto good = request("/metrics");
  good.authorization = "Basic cHJvbWV0aGV1czpwdw=="; // prometheus:pw
  // A scrape holds the only slot while /healthz is asked.
  limited->serve(good, [&](const HttpResponse &) { inner = serve(*limited, request("/healthz")); });
  EXPECT_EQ(inner.status, 200);
  EXPECT_EQ(inner.body, "ok\n");
  EXPECT_EQ(rejected(RejectionReason::concurrency), 0u);
}

TEST_F(PipelineTest, PasswordChecksHoldNoSlotAndBeyondTheirQueueAre429) {
  HeldPasswordCheck check;
  auto authenticator = std::make_unique<BasicAuthenticator>(
      std::map<std::string, std::string>{{"prometheus", bcrypt_hash("pw", 4)}}, check.function(),
      16,
      PasswordCheckLimits{.turns = {.slots = 1, .max_waiting = 0, .max_waiting_per_source = 0}});
  RequestPipeline limited(routes(), 1, std::move(authenticator), {"/healthz"}, rejections);
  auto good = request("/metrics");
  good.authorization = "Basic cHJvbWV0aGV1czpwdw=="; // prometheus:pw
  EXPECT_EQ(serve(limited, good).status, 200);       // verified once, then cached

  check.set_held(true);
  auto guess = request("/metrics");
  guess.authorization = "Basic cHJvbWV0aGV1czpub3Bl"; // prometheus:nope
  std::jthread guesser([&] { EXPECT_EQ(serve(limited, guess).status, 401); });
  ASSERT_TRUE(check.wait_inside(2)) << "the guess never reached bcrypt";
  // The guess waits in bcrypt without the only scrape slot: the cached scrape is served.
  EXPECT_EQ(serve(limited, good).status, 200);
  const auto busy = serve(limited, guess);
  EXPECT_EQ(busy.status, 429);
  EXPECT_EQ(busy.headers.at("Retry-After"), "1");
  EXPECT_EQ(serve(limited, request("/healthz")).status, 200);
  check.set_held(false);
  guesser.join();
  EXPECT_EQ(rejected(RejectionReason::auth_busy), 1u);
  EXPECT_EQ(rejected(RejectionReason::unauthorized), 1u);
  EXPECT_EQ(rejected(RejectionReason::concurrency), 0u);
}

TEST_F(PipelineTest, HandlerExceptionIs500) {
  auto open = pipeline(1, false);
  const auto response = serve(*open, request("/fail"));
  EXPECT_EQ(response.status, 500);
  EXPECT_EQ(response.body, "internal error\n");
  EXPECT_EQ(serve(*open, request("/metrics")).status, 200) << "the slot was released";
}

TEST_F(PipelineTest, KeepsItsOwnCountersWhenGivenNone) {
  RequestPipeline pipeline(routes(), 1, nullptr, {}, nullptr);
  serve(pipeline, request("/.."));
  EXPECT_EQ(pipeline.rejections().value(RejectionReason::bad_request), 1u);
}

} // namespace
} // namespace neutracer

namespace neutracer {
namespace {

// Sample value of neutracer_http_requests_total{path,code}, 0 when absent.
double requests_total(const HttpRequestCounts &counts, const std::string &path,
                      const std::string &code) {
  for (const auto &family : counts.families())
    for (const auto &sample : family.samples)
      if (sample.labels.size() == 2 && sample.labels[0].second == path &&
          sample.labels[1].second == code)
        return sample.value;
  return 0;
}

TEST_F(PipelineTest, CountsEveryAnswerByRouteAndStatusNeverByTheClientsPath) {
  auto counts = std::make_shared<HttpRequestCounts>();
  RequestPipeline counted(routes(), 4,
                          std::make_unique<BasicAuthenticator>(std::map<std::string, std::string>{
                              {"prometheus", bcrypt_hash("pw", 4)}}),
                          {"/healthz"}, rejections, counts);
  serve(counted, request("/healthz"));
  serve(counted, request("/healthz"));
  serve(counted, request("/metrics"));               // no credentials: 401
  serve(counted, request("/no/such/page/12345"));    // 401 before routing, counted as "other"
  serve(counted, request("/%2e%2e/etc/passwd"));     // 400 path check
  auto authorized = request("/metrics");
  authorized.authorization = "Basic " + std::string("cHJvbWV0aGV1czpwdw=="); // prometheus:pw
  serve(counted, authorized);
  authorized.raw_path = "/fail";
  serve(counted, authorized); // the handler throws: 500
  EXPECT_EQ(requests_total(*counts, "/healthz", "200"), 2);
  EXPECT_EQ(requests_total(*counts, "/metrics", "401"), 1);
  EXPECT_EQ(requests_total(*counts, "/metrics", "200"), 1);
  EXPECT_EQ(requests_total(*counts, "other", "401"), 1);
  EXPECT_EQ(requests_total(*counts, "other", "400"), 1);
  EXPECT_EQ(requests_total(*counts, "/fail", "500"), 1);
  std::size_t series = 0;
  for (const auto &family : counts->families()) {
    EXPECT_EQ(family.name, "neutracer_http_requests_total");
    EXPECT_EQ(family.type, MetricType::counter);
    series += family.samples.size();
  }
  EXPECT_EQ(series, 6u);
}

TEST(HttpRequestCounts, StatusesOutsideHttpsRangeShareOneSeries) {
  HttpRequestCounts counts;
  counts.count("other", 99);
  counts.count("other", 600);
  counts.count("other", -1);
  EXPECT_EQ(requests_total(counts, "other", "other"), 3);
  counts.count("/metrics", 599);
  EXPECT_EQ(requests_total(counts, "/metrics", "599"), 1);
}

} // namespace
} // namespace neutracer
