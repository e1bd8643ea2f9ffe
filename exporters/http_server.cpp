#include "exporters/http_server.h"

#include <algorithm>
#include <civetweb.h>
#include <cstring>
#include <spdlog/spdlog.h>

namespace neutracer {
namespace {

const char *reason_phrase(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  default:
    return "Error";
  }
}

int handle_request(mg_connection *connection, void *data) {
  const auto *server = static_cast<const HttpServer *>(data);
  const mg_request_info *info = mg_get_request_info(connection);
  const std::string method = info && info->request_method ? info->request_method : "";
  const std::string path = info && info->local_uri ? info->local_uri : "";
  const std::string query = info && info->query_string ? info->query_string : "";
  HttpResponse response;
  try {
    response = route(method, path, server->routes(), query);
  } catch (const std::exception &error) {
    spdlog::error("HTTP {} {} failed: {}", method, path, error.what());
    response = {500, "text/plain; charset=utf-8", "internal error\n", {}};
  }
  std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " +
                     reason_phrase(response.status) + "\r\nContent-Type: " + response.content_type +
                     "\r\nContent-Length: " + std::to_string(response.body.size()) +
                     "\r\nCache-Control: no-store\r\n";
  for (const auto &[name, value] : response.headers)
    head += name + ": " + value + "\r\n";
  head += "\r\n";
  mg_write(connection, head.data(), head.size());
  if (method != "HEAD")
    mg_write(connection, response.body.data(), response.body.size());
  return static_cast<int>(response.status);
}

int log_message(const mg_connection *, const char *message) {
  spdlog::warn("http: {}", message);
  return 1;
}

} // namespace

HttpResponse route(const std::string &method, const std::string &path, const HttpRoutes &routes,
                   const std::string &query) {
  const auto handler = routes.find(path);
  if (handler == routes.end())
    return {404, "text/plain; charset=utf-8", "not found; try /metrics\n", {}};
  if (method != "GET" && method != "HEAD")
    return {405, "text/plain; charset=utf-8", "method not allowed\n", {{"Allow", "GET, HEAD"}}};
  return handler->second(query);
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

HttpServer::HttpServer(const std::string &listen, HttpRoutes routes) : routes_(std::move(routes)) {
  // civetweb takes numeric addresses only.
  std::string ports = listen;
  if (ports.starts_with("localhost:"))
    ports = "127.0.0.1:" + ports.substr(std::strlen("localhost:"));
  const char *options[] = {"listening_ports",
                           ports.c_str(),
                           "num_threads",
                           "4",
                           "request_timeout_ms",
                           "10000",
                           "max_request_size",
                           "16384",
                           "enable_keep_alive",
                           "yes",
                           nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = log_message;
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.configuration_options = options;
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
    throw HttpError("cannot listen on " + listen + ": " +
                    (error_text[0] ? error_text : "unknown civetweb error"));
  }
  mg_set_request_handler(context_, "/", handle_request, this);
}

HttpServer::~HttpServer() {
  mg_stop(context_);
  mg_exit_library();
}

} // namespace neutracer
