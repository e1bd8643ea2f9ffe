#pragma once
// The HTTP endpoint (civetweb). Routing is pure (route()); the server only moves bytes.
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

struct mg_context;

namespace neutracer {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::map<std::string, std::string> headers;
};

// Called with the request's query string ("pid=42"), without the '?'.
using HttpHandler = std::function<HttpResponse(const std::string &query)>;
using HttpRoutes = std::map<std::string, HttpHandler>; // exact path -> handler

// GET and HEAD of a known path run its handler; other methods get 405, other paths 404.
HttpResponse route(const std::string &method, const std::string &path, const HttpRoutes &routes,
                   const std::string &query = "");

// The value of `name` in a query string ("a=1&pid=42"), undecoded; nullopt when absent.
std::optional<std::string> query_parameter(const std::string &query, const std::string &name);

class HttpError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

class HttpServer {
public:
  // Binds `listen` (HOST:PORT, IPv4 or localhost) and serves until destroyed. Throws HttpError
  // with civetweb's reason when the address cannot be used.
  HttpServer(const std::string &listen, HttpRoutes routes);
  ~HttpServer();
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

  const HttpRoutes &routes() const { return routes_; }

private:
  HttpRoutes routes_;
  mg_context *context_ = nullptr;
};

} // namespace neutracer
