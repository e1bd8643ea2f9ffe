// SPDX-License-Identifier: Apache-2.0
// Fuzzes request path validation, routing and query-string lookup with the method, path and
// query civetweb hands over from the network. Input: method, path, query and a parameter name,
// one per line.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http/http_server.h"
#include "http/request_validation.h"
#include "tests/fuzz/fuzz_check.h"

using neutracer::fuzz::require;

namespace {

bool is_unreserved_or_slash(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~' || c == '/';
}

// The next line of `rest` (without its newline); the last line takes what is left.
std::string take_line(std::string_view &rest) {
  const auto end = rest.find('\n');
  const std::string line(rest.substr(0, end));
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
  return line;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char *>(data), size);
  const std::string method = take_line(rest);
  const std::string path = take_line(rest);
  const std::string query = take_line(rest);
  const std::string name(rest);

  if (!neutracer::request_path_problem(path)) {
    require(path.starts_with('/'), "an accepted path is absolute");
    for (const char c : path)
      require(is_unreserved_or_slash(c), "an accepted path is '/' and unreserved characters");
    const std::string segments = path + "/";
    require(segments.find("/./") == std::string::npos && segments.find("/../") == std::string::npos,
            "an accepted path has no '.' or '..' segment");
  }

  int handler_calls = 0;
  std::string seen_query;
  neutracer::HttpRoutes routes;
  for (const char *known : {"/", "/metrics", "/memory"})
    routes[known] = [&](const std::string &q) {
      ++handler_calls;
      seen_query = q;
      return neutracer::HttpResponse{200, "text/plain", "ok\n", {}};
    };

  const auto response = neutracer::route(method, path, routes, query);
  const bool known_path = routes.contains(path);
  const bool readable_method = method == "GET" || method == "HEAD";
  require(response.status == (!known_path       ? 404
                              : readable_method ? 200
                                                : 405),
          "404 for unknown paths, 405 for other methods, else the handler's answer");
  require(handler_calls == (response.status == 200 ? 1 : 0), "the handler runs only for 200");
  require(handler_calls == 0 || seen_query == query, "the handler gets the query unchanged");
  require(response.status != 405 || response.headers.at("Allow") == "GET, HEAD",
          "405 says which methods are allowed");

  const auto value = neutracer::query_parameter(query, name);
  if (value) {
    require(value->find('&') == std::string::npos, "a value ends at the next '&'");
    const bool as_pair =
        ("&" + query + "&").find("&" + name + "=" + *value + "&") != std::string::npos;
    const bool as_flag =
        value->empty() && ("&" + query + "&").find("&" + name + "&") != std::string::npos;
    require(as_pair || as_flag, "the value is the one after name= in the query");
  }
  return 0;
}
