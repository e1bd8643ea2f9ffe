// SPDX-License-Identifier: Apache-2.0
#pragma once
// The HTTP endpoint (civetweb). Routing is pure (route()), request checks live in
// RequestPipeline; the server only moves bytes.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "http/deflated_text.h"

struct mg_context;

namespace neutracer {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::map<std::string, std::string> headers;
  // Sent ahead of `body` and never copied: text the handler shares with whoever else holds it
  // (a published snapshot's /metrics text or JSON, megabytes at 1 000 processes, of which each
  // copy stayed in the worker's heap). Null: `body` alone.
  std::shared_ptr<const std::string> shared_prefix = nullptr;
  // Text sent ahead of the shared prefix and `body`, kept deflated (the scan's /metrics text):
  // sent gzip-encoded as it is, or inflated piece by piece as it is written. Null: none.
  std::shared_ptr<const DeflatedText> deflated_prefix = nullptr;

  std::size_t body_size() const {
    return (deflated_prefix ? deflated_prefix->size : 0) +
           (shared_prefix ? shared_prefix->size() : 0) + body.size();
  }
  // The prefixes and the body as one string (a copy: for tests and small answers).
  std::string whole_body() const {
    return (deflated_prefix ? inflate_text(*deflated_prefix) : std::string()) +
           (shared_prefix ? *shared_prefix : std::string()) + body;
  }
};

// Called with the request's query string ("pid=42"), without the '?'.
using HttpHandler = std::function<HttpResponse(const std::string &query)>;
// Path -> handler. A key is an exact path, or a path with one `{name}` segment
// ("/api/v1/processes/{pid}/sites") that matches one segment of letters, digits, '.', '_' or '-';
// the handler then gets that segment as query parameter `name`, ahead of the request's own.
// A key that starts with kPostRoute ("POST /api/v1/...") answers POST, an action that takes no
// body; every other key answers GET and HEAD.
using HttpRoutes = std::map<std::string, HttpHandler>;
inline constexpr std::string_view kPostRoute = "POST ";

// The key of `routes` that `path` matches (an exact key first) and the query its handler gets;
// nullopt when none matches.
struct RouteMatch {
  const std::string *key = nullptr;
  std::string query;
};
std::optional<RouteMatch> match_route(const std::string &path, const HttpRoutes &routes,
                                      const std::string &query = "");

// GET and HEAD of a known path run its handler; other methods get 405, other paths 404.
HttpResponse route(const std::string &method, const std::string &path, const HttpRoutes &routes,
                   const std::string &query = "");

// The value of `name` in a query string ("a=1&pid=42"), undecoded; nullopt when absent.
std::optional<std::string> query_parameter(const std::string &query, const std::string &name);

class HttpError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

class HttpRejectionCounters;
class HttpRequestCounts;
class RequestPipeline;

// Workers beyond max_concurrent_requests at the least: they answer 503, 429, 401 and 400 while
// the admitted requests run.
inline constexpr std::uint32_t kMinSpareWorkers = 8;
inline constexpr std::uint32_t kDefaultMaxConnections = 256;

struct HttpServerOptions {
  std::string listen = "127.0.0.1:10492"; // HOST:PORT, IPv4 or localhost
  // Requests handled at once; more get 503 at once.
  std::uint32_t max_concurrent_requests = 4;
  // Connections served at once. civetweb gives each connection one worker thread from the
  // moment it is accepted, even before the client has sent a byte, and keeps it until the
  // request is answered or request_timeout passes: a client that idles or sends slowly holds a
  // worker all that time, so this is how many of them can be open while a scrape still finds a
  // free worker at once. More connections wait in the listen queue. At least
  // max_concurrent_requests + kMinSpareWorkers.
  std::uint32_t max_connections = kDefaultMaxConnections;
  // How long civetweb waits for a request's headers, and for each write to the client.
  std::chrono::milliseconds request_timeout{10000};
  // User name -> bcrypt hash; empty: no authentication.
  std::map<std::string, std::string> basic_auth_users;
  // Paths served without authentication.
  std::set<std::string> public_paths;
  // Where refused requests are counted; null: the server keeps its own counters.
  std::shared_ptr<HttpRejectionCounters> rejections;
  // Where answered requests are counted by path and status; null: the server keeps its own.
  std::shared_ptr<HttpRequestCounts> requests;
};

class HttpServer {
public:
  // Binds options.listen and serves until destroyed. Throws HttpError with civetweb's reason
  // when the address cannot be used, or when basic_auth_users holds a bad name or hash.
  HttpServer(const HttpServerOptions &options, HttpRoutes routes);
  // Plain HTTP on `listen` with the default limits and no authentication.
  HttpServer(const std::string &listen, HttpRoutes routes);
  ~HttpServer();
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

  const HttpRoutes &routes() const;
  const HttpRejectionCounters &rejections() const;

private:
  std::unique_ptr<RequestPipeline> pipeline_;
  mg_context *context_ = nullptr;
};

} // namespace neutracer
