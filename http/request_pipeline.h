// SPDX-License-Identifier: Apache-2.0
#pragma once
// What happens to one HTTP request before and around its handler: path and body checks, the
// concurrency limit, basic authentication, routing. No sockets: HttpServer feeds it requests.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "http/basic_authenticator.h"
#include "http/concurrency_limiter.h"
#include "http/http_rejections.h"
#include "http/http_request_counts.h"
#include "http/http_server.h"

namespace neutracer {

struct HttpRequest {
  std::string method;
  std::string raw_path; // as sent: not percent-decoded, no query
  std::string query;
  long long content_length = -1; // -1: no Content-Length header
  bool has_transfer_encoding = false;
  std::optional<std::string> authorization; // the Authorization header, when present
  std::string accept_encoding;              // the Accept-Encoding header; empty when absent
  std::size_t head_bytes = 0;               // request line and headers, as civetweb parsed them
  std::size_t header_count = 0;
  // Bytes between the HTTP version and the first header name; nullopt without headers.
  std::optional<std::size_t> request_line_terminator_bytes;
  std::string remote_address; // the client's IP address: whose turn a password check waits for
};

// Takes the answer over: a big body (a JSON document unpacked for the request) is moved on to
// the socket, not copied.
using ResponseSender = std::function<void(HttpResponse)>;

class RequestPipeline {
public:
  // `authenticator` may be null (no authentication); `public_paths` are served without it.
  RequestPipeline(HttpRoutes routes, std::uint32_t max_concurrent_requests,
                  std::unique_ptr<BasicAuthenticator> authenticator,
                  std::set<std::string> public_paths,
                  std::shared_ptr<HttpRejectionCounters> rejections,
                  std::shared_ptr<HttpRequestCounts> requests = nullptr);

  // Answers `request` through `send` and counts the answer by path and status. `send` runs while
  // the request still counts against the concurrency limit (writing to a slow client occupies a
  // worker too). Order: head, path and body checks; public paths served at once; authentication
  // (401, or 429 when no bcrypt slot came free in time); the concurrency limit (503); the route.
  // Never throws from a handler: its exceptions become 500.
  void serve(const HttpRequest &request, const ResponseSender &send);

  const HttpRoutes &routes() const { return routes_; }
  HttpRejectionCounters &rejections() { return *rejections_; }
  HttpRequestCounts &requests() { return *requests_; }

private:
  // The 401 or 429 for a request that may not pass, or nullopt.
  std::optional<HttpResponse> authentication_refusal(const HttpRequest &request);
  HttpResponse answer(const HttpRequest &request);

  HttpRoutes routes_;
  ConcurrencyLimiter limiter_;
  std::unique_ptr<BasicAuthenticator> authenticator_;
  std::set<std::string> public_paths_;
  std::shared_ptr<HttpRejectionCounters> rejections_;
  std::shared_ptr<HttpRequestCounts> requests_;
};

} // namespace neutracer
