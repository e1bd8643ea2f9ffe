// SPDX-License-Identifier: Apache-2.0
#include "http/request_pipeline.h"

#include <spdlog/spdlog.h>

#include "http/basic_auth.h"
#include "http/request_validation.h"

namespace neutracer {
namespace {

constexpr const char *kPlainText = "text/plain; charset=utf-8";

} // namespace

RequestPipeline::RequestPipeline(HttpRoutes routes, std::uint32_t max_concurrent_requests,
                                 std::unique_ptr<BasicAuthenticator> authenticator,
                                 std::set<std::string> public_paths,
                                 std::shared_ptr<HttpRejectionCounters> rejections,
                                 std::shared_ptr<HttpRequestCounts> requests)
    : routes_(std::move(routes)), limiter_(max_concurrent_requests),
      authenticator_(std::move(authenticator)), public_paths_(std::move(public_paths)),
      rejections_(rejections ? std::move(rejections) : std::make_shared<HttpRejectionCounters>()),
      requests_(requests ? std::move(requests) : std::make_shared<HttpRequestCounts>()) {}

void RequestPipeline::serve(const HttpRequest &request, const ResponseSender &send_answer) {
  const ResponseSender send = [&](HttpResponse response) {
    // Counted by route: a path template is one label value, whatever its parameter.
    const auto match = match_route(request.raw_path, routes_);
    requests_->count(match ? *match->key : "other", response.status);
    send_answer(std::move(response));
  };
  if (auto too_large = request_head_problem(request.head_bytes, request.header_count)) {
    rejections_->count(RejectionReason::too_large);
    send({431, kPlainText, "request too large: " + *too_large + "\n", {}});
    return;
  }
  auto problem = request_line_end_problem(request.request_line_terminator_bytes);
  if (!problem)
    problem = request_path_problem(request.raw_path);
  if (!problem)
    problem =
        request_body_problem(request.method, request.content_length, request.has_transfer_encoding);
  if (problem) {
    rejections_->count(RejectionReason::bad_request);
    send({400, kPlainText, "bad request: " + *problem + "\n", {}});
    return;
  }
  // Public paths (/healthz) take neither a credential check nor a slot: a liveness probe must
  // answer while scrapes or password guesses occupy the endpoint. Their handlers are cheap.
  if (public_paths_.contains(request.raw_path)) {
    send(answer(request));
    return;
  }
  // Before the slot: a client waiting for bcrypt must not hold one of the scrape slots.
  if (auto refusal = authentication_refusal(request)) {
    send(*refusal);
    return;
  }
  const auto slot = limiter_.try_acquire();
  if (!slot) {
    rejections_->count(RejectionReason::concurrency);
    send({503, kPlainText, "too many concurrent requests; try again\n", {}});
    return;
  }
  send(answer(request));
}

std::optional<HttpResponse> RequestPipeline::authentication_refusal(const HttpRequest &request) {
  if (!authenticator_)
    return std::nullopt;
  switch (authenticator_->decide(request.authorization, request.remote_address)) {
  case AuthDecision::allowed:
    return std::nullopt;
  case AuthDecision::busy:
    rejections_->count(RejectionReason::auth_busy);
    return HttpResponse{
        429, kPlainText, "too many password checks at once; try again\n", {{"Retry-After", "1"}}};
  case AuthDecision::refused:
    break;
  }
  rejections_->count(RejectionReason::unauthorized);
  // The same answer whether the user, the password or the header was wrong.
  return HttpResponse{
      401, kPlainText, "unauthorized\n", {{"WWW-Authenticate", kBasicAuthChallenge}}};
}

HttpResponse RequestPipeline::answer(const HttpRequest &request) {
  try {
    return route(request.method, request.raw_path, routes_, request.query);
  } catch (const std::exception &error) {
    spdlog::error("HTTP {} {} failed: {}", request.method, request.raw_path, error.what());
    return {500, kPlainText, "internal error\n", {}};
  }
}

} // namespace neutracer
