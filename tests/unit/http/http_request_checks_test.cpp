// SPDX-License-Identifier: Apache-2.0
// Pure pieces of the HTTP endpoint's request handling: path and body checks, rejection
// reasons and their metric, the concurrency limiter.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "http/concurrency_limiter.h"
#include "http/http_rejections.h"
#include "http/request_validation.h"

namespace neutracer {
namespace {

TEST(RequestPathProblem, AcceptsPlainPaths) {
  for (const std::string path : {"/", "/metrics", "/api/v1/kernels", "/healthz", "/a.b-c_d~e",
                                 "//metrics", "/metrics/", "/...", "/.hidden", "/x..y"})
    EXPECT_EQ(request_path_problem(path), std::nullopt) << path;
}

TEST(RequestPathProblem, RefusesDotSegments) {
  for (const std::string path :
       {"/..", "/../etc/passwd", "/a/../metrics", "/a/..", "/.", "/./metrics", "/a/./b", "/a/."}) {
    const auto problem = request_path_problem(path);
    ASSERT_TRUE(problem.has_value()) << path;
    EXPECT_NE(problem->find("'..'"), std::string::npos) << *problem;
  }
}

TEST(RequestPathProblem, RefusesPercentEncoding) {
  // %00 would end the C string at "/metrics"; %2e%2e is "..".
  for (const std::string path : {"/metrics%00junk", "/%2e%2e/metrics", "/metrics%2F", "/%", "/%zz"})
    EXPECT_NE(request_path_problem(path).value_or("").find("percent"), std::string::npos) << path;
}

TEST(RequestPathProblem, RefusesOtherCharactersAndShapes) {
  using namespace std::string_literals;
  for (const std::string &path :
       {""s, "metrics"s, "*"s, "http://x/metrics"s, "/a b"s, "/a\"b"s, "/a<b"s, "/a\\b"s, "/m\0x"s,
        "/m\x7f"s, "/m\xc3\xa9"s, "/a?b"s, "/a#b"s, "/a;b"s, "/" + std::string(1024, 'a')})
    EXPECT_TRUE(request_path_problem(path).has_value()) << path;
  EXPECT_EQ(request_path_problem("/" + std::string(1023, 'a')), std::nullopt);
}

TEST(RequestHeadProblem, LimitsSizeAndHeaderCount) {
  EXPECT_EQ(request_head_problem(100, 5), std::nullopt);
  EXPECT_EQ(request_head_problem(kMaxRequestHeadBytes, kMaxRequestHeaders), std::nullopt);
  EXPECT_NE(request_head_problem(kMaxRequestHeadBytes + 1, 5).value_or("").find("16384 bytes"),
            std::string::npos);
  // civetweb keeps at most 64 headers and drops the rest unseen: 64 means "maybe more".
  EXPECT_TRUE(request_head_problem(100, kCivetwebMaxHeaders).has_value());
  // Our limit must be below civetweb's, or civetweb's plain 400 would answer first.
  EXPECT_LT(kMaxRequestHeadBytes, kCivetwebRequestBuffer);
  EXPECT_LT(kMaxRequestHeaders, kCivetwebMaxHeaders);
}

TEST(RequestLineEndProblem, OnlyCrLfEndsARequestLine) {
  EXPECT_EQ(request_line_end_problem(2), std::nullopt);
  EXPECT_EQ(request_line_end_problem(std::nullopt), std::nullopt) << "no header to measure to";
  // 1: a bare CR (or LF) before the first header; 3 and more: CR CR LF, CR SP LF, ...
  for (std::size_t bytes : {0, 1, 3, 4, 100})
    EXPECT_EQ(request_line_end_problem(bytes), "the request line must end with CR LF") << bytes;
}

TEST(RequestBodyProblem, GetAndHeadCarryNoBody) {
  EXPECT_EQ(request_body_problem("GET", -1, false), std::nullopt);
  EXPECT_EQ(request_body_problem("GET", 0, false), std::nullopt);
  EXPECT_EQ(request_body_problem("HEAD", -1, false), std::nullopt);
  EXPECT_NE(request_body_problem("GET", 1, false).value_or("").find("body"), std::string::npos);
  EXPECT_TRUE(request_body_problem("GET", -1, true).has_value());
  EXPECT_TRUE(request_body_problem("HEAD", 10, false).has_value());
  // Other methods get their 405 from routing, body or not.
  EXPECT_EQ(request_body_problem("POST", 10, false), std::nullopt);
  EXPECT_EQ(request_body_problem("PUT", -1, true), std::nullopt);
}

TEST(RejectionReason, ForCivetwebErrorStatuses) {
  EXPECT_EQ(rejection_reason_for_status(413), RejectionReason::too_large);
  EXPECT_EQ(rejection_reason_for_status(414), RejectionReason::too_large);
  EXPECT_EQ(rejection_reason_for_status(431), RejectionReason::too_large);
  EXPECT_EQ(rejection_reason_for_status(400), RejectionReason::bad_request);
  EXPECT_EQ(rejection_reason_for_status(408), RejectionReason::bad_request);
  EXPECT_EQ(rejection_reason_for_status(505), RejectionReason::bad_request);
  EXPECT_EQ(rejection_reason_for_status(200), std::nullopt);
  EXPECT_EQ(rejection_reason_for_status(500), std::nullopt);
  EXPECT_EQ(rejection_reason_for_status(503), std::nullopt);
}

TEST(HttpRejectionFamilies, EveryReasonFromZero) {
  HttpRejectionCounters counters;
  const auto families = http_rejection_families(counters);
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].name, "neutracer_http_requests_rejected_total");
  EXPECT_EQ(families[0].type, MetricType::counter);
  std::vector<std::string> reasons;
  for (const auto &sample : families[0].samples) {
    ASSERT_EQ(sample.labels.size(), 1u);
    EXPECT_EQ(sample.labels[0].first, "reason");
    reasons.push_back(sample.labels[0].second);
    EXPECT_EQ(sample.value, 0);
  }
  EXPECT_EQ(reasons, (std::vector<std::string>{"concurrency", "unauthorized", "auth_busy",
                                               "too_large", "bad_request"}));
}

TEST(HttpRejectionFamilies, CountsPerReason) {
  HttpRejectionCounters counters;
  counters.count(RejectionReason::unauthorized);
  counters.count(RejectionReason::unauthorized);
  counters.count(RejectionReason::too_large);
  EXPECT_EQ(counters.value(RejectionReason::unauthorized), 2u);
  EXPECT_EQ(counters.value(RejectionReason::concurrency), 0u);
  std::ostringstream text;
  render_text(http_rejection_families(counters), text);
  EXPECT_NE(text.str().find("neutracer_http_requests_rejected_total{reason=\"unauthorized\"} 2\n"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("neutracer_http_requests_rejected_total{reason=\"too_large\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.str().find("# TYPE neutracer_http_requests_rejected_total counter"),
            std::string::npos);
}

TEST(ConcurrencyLimiter, AdmitsUpToTheLimitAndReleasesOnScopeExit) {
  ConcurrencyLimiter limiter(2);
  {
    auto first = limiter.try_acquire();
    auto second = limiter.try_acquire();
    ASSERT_TRUE(first && second);
    EXPECT_EQ(limiter.in_use(), 2u);
    EXPECT_FALSE(limiter.try_acquire().has_value());
    EXPECT_EQ(limiter.in_use(), 2u) << "a refusal holds nothing";
  }
  EXPECT_EQ(limiter.in_use(), 0u);
  EXPECT_TRUE(limiter.try_acquire().has_value());
  EXPECT_EQ(limiter.in_use(), 0u);
}

TEST(ConcurrencyLimiter, MovedSlotReleasesOnce) {
  ConcurrencyLimiter limiter(1);
  {
    auto slot = limiter.try_acquire();
    ASSERT_TRUE(slot);
    std::optional<ConcurrencyLimiter::Slot> moved(std::move(*slot));
    slot.reset();
    EXPECT_EQ(limiter.in_use(), 1u);
  }
  EXPECT_EQ(limiter.in_use(), 0u);
}

} // namespace
} // namespace neutracer
