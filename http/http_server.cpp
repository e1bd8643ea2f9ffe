// SPDX-License-Identifier: Apache-2.0
#include "http/http_server.h"

#include <algorithm>
#include <cctype>
#include <civetweb.h>
#include <cstring>
#include <spdlog/spdlog.h>

#include "common/stack_pages.h"
#include "http/civetweb_listen.h"
#include "http/content_encoding.h"
#include "http/request_pipeline.h"
#include "http/request_validation.h"
#include "http/response_head.h"

namespace neutracer {
namespace {

static_assert(kCivetwebMaxHeaders == MG_MAX_HEADERS,
              "request_head_problem assumes civetweb's limit");

void write_response(mg_connection *connection, const std::string &method,
                    const std::string &accept_encoding, HttpResponse plain) {
  // HEAD too: its head must say what a GET would get.
  const HttpResponse response = encode_for_client(accept_encoding, std::move(plain));
  const std::string head =
      response_head(response.status, response.content_type, response.body_size(), response.headers);
  mg_write(connection, head.data(), head.size());
  if (method == "HEAD")
    return;
  if (response.deflated_prefix) {
    try {
      inflate_text(*response.deflated_prefix, [&](std::string_view piece) {
        mg_write(connection, piece.data(), piece.size());
      });
    } catch (const std::exception &) {
      return; // never with text the daemon deflated; the client sees a short answer
    }
  }
  if (response.shared_prefix)
    mg_write(connection, response.shared_prefix->data(), response.shared_prefix->size());
  mg_write(connection, response.body.data(), response.body.size());
}

// What RequestPipeline needs from civetweb's parsed request.
HttpRequest request_from(mg_connection *connection) {
  HttpRequest request;
  const mg_request_info *info = mg_get_request_info(connection);
  if (!info)
    return request;
  request.method = info->request_method ? info->request_method : "";
  // With decode_url off this is the path exactly as sent, %-escapes included.
  request.raw_path = info->local_uri_raw ? info->local_uri_raw : "";
  request.query = info->query_string ? info->query_string : "";
  request.content_length = info->content_length;
  request.has_transfer_encoding = mg_get_header(connection, "Transfer-Encoding") != nullptr;
  if (const char *authorization = mg_get_header(connection, "Authorization"))
    request.authorization = authorization;
  if (const char *accept_encoding = mg_get_header(connection, "Accept-Encoding"))
    request.accept_encoding = accept_encoding;
  // About "METHOD PATH?QUERY HTTP/x.y\r\n", then "Name: value\r\n" per header and "\r\n".
  request.head_bytes = request.method.size() + request.raw_path.size() + request.query.size() +
                       std::strlen(info->http_version ? info->http_version : "") + 12;
  for (int i = 0; i < info->num_headers; ++i)
    request.head_bytes +=
        std::strlen(info->http_headers[i].name) + std::strlen(info->http_headers[i].value) + 4;
  request.header_count = static_cast<std::size_t>(info->num_headers);
  // civetweb parses the head in place in one buffer, overwriting the request line's terminator
  // (from the byte that ended the version) with NULs: the first header's name follows it.
  if (info->num_headers > 0 && info->http_version) {
    const auto version_end =
        reinterpret_cast<std::uintptr_t>(info->http_version) + std::strlen(info->http_version);
    const auto first_name = reinterpret_cast<std::uintptr_t>(info->http_headers[0].name);
    if (first_name > version_end && first_name - version_end <= kCivetwebRequestBuffer)
      request.request_line_terminator_bytes = first_name - version_end;
  }
  request.remote_address = info->remote_addr;
  return request;
}

int handle_request(mg_connection *connection, void *data) {
  auto *pipeline = static_cast<RequestPipeline *>(data);
  const HttpRequest request = request_from(connection);
  int status = 500;
  pipeline->serve(request, [&](HttpResponse response) {
    status = response.status;
    write_response(connection, request.method, request.accept_encoding, std::move(response));
  });
  release_stack_below_caller(); // this worker may next serve in many scrapes' time
  return status;
}

// Civetweb refuses malformed and oversized requests itself. Its own error page would start
// with "HTTP/" + the version token the client sent (CR, LF and all: header injection), so this
// writes the whole answer instead, from fixed text only, and tells civetweb it is done. Civetweb
// closes the connection after any such error.
int answer_protocol_error(mg_connection *connection, int status, const char *message) {
  auto *pipeline = static_cast<RequestPipeline *>(mg_get_user_data(mg_get_context(connection)));
  const auto reason = rejection_reason_for_status(status);
  if (pipeline) {
    if (reason)
      pipeline->rejections().count(*reason);
    pipeline->requests().count("other", status); // the path is the client's: never a label
  }
  spdlog::debug("http: refused a request with {}", status);
  (void)message; // civetweb's message quotes the client's bytes: neither logged nor sent
  const std::string body = reason == RejectionReason::too_large ? "request too large\n"
                           : status == 505                      ? "HTTP version not supported\n"
                                                                : "bad request\n";
  const std::string head = response_head(status, "text/plain; charset=utf-8", body.size(), {},
                                         /*close=*/true);
  mg_write(connection, head.data(), head.size());
  mg_write(connection, body.data(), body.size());
  return 0;
}

int log_message(const mg_connection *, const char *message) {
  spdlog::warn("http: {}", message);
  return 1;
}

HttpServerOptions listen_only(const std::string &listen) {
  HttpServerOptions options;
  options.listen = listen;
  return options;
}

// Checks waiting for bcrypt hold a worker each: at most half of those that admitted requests do
// not use, so 400s, 401s, /healthz and cached scrapes always find one.
PasswordCheckLimits password_check_limits(const HttpServerOptions &options) {
  PasswordCheckLimits limits;
  const std::uint32_t workers =
      std::max(options.max_connections, options.max_concurrent_requests + kMinSpareWorkers);
  limits.turns.max_waiting = std::min<std::size_t>(limits.turns.max_waiting,
                                                   (workers - options.max_concurrent_requests) / 2);
  limits.turns.max_waiting_per_source =
      std::min(limits.turns.max_waiting_per_source, limits.turns.max_waiting);
  return limits;
}

std::unique_ptr<BasicAuthenticator> make_authenticator(const HttpServerOptions &options) {
  if (options.basic_auth_users.empty())
    return nullptr;
  try {
    return std::make_unique<BasicAuthenticator>(options.basic_auth_users, bcrypt_matches, 16,
                                                password_check_limits(options));
  } catch (const std::invalid_argument &error) {
    throw HttpError(std::string("basic authentication: ") + error.what());
  }
}

} // namespace

std::optional<RouteMatch> match_route(const std::string &path, const HttpRoutes &routes,
                                      const std::string &query) {
  if (const auto exact = routes.find(path); exact != routes.end())
    return RouteMatch{&exact->first, query};
  for (const auto &[key, handler] : routes) {
    const auto open = key.find("/{");
    const auto close = key.find("}", open);
    if (open == std::string::npos || close == std::string::npos)
      continue;
    const std::string_view prefix(key.data(), open + 1), suffix(key.data() + close + 1);
    if (path.size() <= prefix.size() + suffix.size() || !path.starts_with(prefix) ||
        !path.ends_with(suffix))
      continue;
    const std::string value =
        path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
    // One segment, and nothing that could reshape the query it is written into.
    if (!std::all_of(value.begin(), value.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
        }))
      continue;
    const std::string name = key.substr(open + 2, close - open - 2);
    return RouteMatch{&key, name + "=" + value + (query.empty() ? "" : "&" + query)};
  }
  return std::nullopt;
}

HttpResponse route(const std::string &method, const std::string &path, const HttpRoutes &routes,
                   const std::string &query) {
  const auto post = match_route(std::string(kPostRoute) + path, routes, query);
  if (post && method == "POST")
    return routes.at(*post->key)(post->query);
  const auto match = match_route(path, routes, query);
  if (!match && !post)
    return {404, "text/plain; charset=utf-8", "not found; try /metrics\n", {}};
  if (!match || (method != "GET" && method != "HEAD"))
    return {405,
            "text/plain; charset=utf-8",
            "method not allowed\n",
            {{"Allow", match ? "GET, HEAD" : "POST"}}};
  return routes.at(*match->key)(match->query);
}

std::optional<std::string> query_parameter(const std::string &query, const std::string &name) {
  std::size_t at = 0;
  while (at <= query.size()) {
    const auto end = std::min(query.find('&', at), query.size());
    const std::string pair = query.substr(at, end - at);
    const auto equals = pair.find('=');
    if (pair.substr(0, equals) == name)
      return equals == std::string::npos ? std::string() : pair.substr(equals + 1);
    at = end + 1;
  }
  return std::nullopt;
}

HttpServer::HttpServer(const std::string &listen, HttpRoutes routes)
    : HttpServer(listen_only(listen), std::move(routes)) {}

HttpServer::HttpServer(const HttpServerOptions &options, HttpRoutes routes)
    : pipeline_(std::make_unique<RequestPipeline>(
          std::move(routes), options.max_concurrent_requests, make_authenticator(options),
          options.public_paths, options.rejections, options.requests)) {
  const auto listening_port = civetweb_listening_port(options.listen, civetweb_has_ipv6());
  if (const auto *refusal = std::get_if<ListenRefusal>(&listening_port))
    throw HttpError("cannot listen on " + options.listen + ": " + refusal->reason);
  const std::string &ports = std::get<std::string>(listening_port);
  const std::string threads = std::to_string(
      std::max(options.max_connections, options.max_concurrent_requests + kMinSpareWorkers));
  const std::string timeout_ms = std::to_string(options.request_timeout.count());
  const std::string buffer_bytes = std::to_string(kCivetwebRequestBuffer);
  // Name, value pairs. With decode_url off, paths reach RequestPipeline as sent: "%00" or
  // "%2e%2e" cannot turn into another path.
  // clang-format off
  const char *civetweb_options[] = {
      "listening_ports",    ports.c_str(),
      "num_threads",        threads.c_str(),
      "request_timeout_ms", timeout_ms.c_str(),
      "max_request_size",   buffer_bytes.c_str(),
      "enable_keep_alive",  "yes",
      "decode_url",         "no",
      nullptr};
  // clang-format on
  mg_callbacks callbacks{};
  callbacks.log_message = log_message;
  callbacks.http_error = answer_protocol_error;
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.user_data = pipeline_.get();
  init.configuration_options = civetweb_options;
  char error_text[256] = "";
  unsigned error_code = 0;
  mg_error_data error{};
  error.code = &error_code;
  error.text = error_text;
  error.text_buffer_size = sizeof error_text;
  mg_init_library(0);
  context_ = mg_start2(&init, &error);
  if (!context_) {
    mg_exit_library();
    throw HttpError("cannot listen on " + options.listen + ": " +
                    (error_text[0] ? error_text : "unknown civetweb error"));
  }
  mg_set_request_handler(context_, "/", handle_request, pipeline_.get());
}

HttpServer::~HttpServer() {
  // Stops every worker before the pipeline they use goes away.
  mg_stop(context_);
  mg_exit_library();
}

const HttpRoutes &HttpServer::routes() const { return pipeline_->routes(); }

const HttpRejectionCounters &HttpServer::rejections() const { return pipeline_->rejections(); }

} // namespace neutracer
