// SPDX-License-Identifier: Apache-2.0
#include "http/request_validation.h"

namespace neutracer {
namespace {

constexpr std::size_t kMaxPathLength = 1024;

bool is_path_character(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~' || c == '/';
}

} // namespace

std::optional<std::string> request_path_problem(std::string_view raw_path) {
  if (raw_path.empty() || raw_path.front() != '/')
    return "the path must start with '/'";
  if (raw_path.size() > kMaxPathLength)
    return "the path is longer than " + std::to_string(kMaxPathLength) + " characters";
  for (char c : raw_path) {
    if (c == '%')
      return "percent-encoded characters are not accepted in the path";
    if (!is_path_character(c))
      return "the path may contain only letters, digits, '/', '-', '.', '_' and '~'";
  }
  std::size_t start = 1;
  while (start <= raw_path.size()) {
    const std::size_t slash = raw_path.find('/', start);
    const std::size_t end = slash == std::string_view::npos ? raw_path.size() : slash;
    const std::string_view segment = raw_path.substr(start, end - start);
    if (segment == "." || segment == "..")
      return "'.' and '..' segments are not accepted in the path";
    start = end + 1;
  }
  return std::nullopt;
}

std::optional<std::string> request_head_problem(std::size_t head_bytes, std::size_t header_count) {
  if (head_bytes > kMaxRequestHeadBytes)
    return "the request line and headers are larger than " + std::to_string(kMaxRequestHeadBytes) +
           " bytes";
  if (header_count > kMaxRequestHeaders)
    return "more than " + std::to_string(kMaxRequestHeaders) + " headers";
  return std::nullopt;
}

std::optional<std::string> request_line_end_problem(std::optional<std::size_t> terminator_bytes) {
  if (terminator_bytes && *terminator_bytes != 2)
    return "the request line must end with CR LF";
  return std::nullopt;
}

std::optional<std::string> request_body_problem(std::string_view method, long long content_length,
                                                bool has_transfer_encoding) {
  if (method != "GET" && method != "HEAD")
    return std::nullopt;
  if (content_length > 0 || has_transfer_encoding)
    return std::string(method) + " requests must not carry a body";
  return std::nullopt;
}

} // namespace neutracer
