// SPDX-License-Identifier: Apache-2.0
#include "http/response_head.h"

#include <string_view>

namespace neutracer {
namespace {

bool has_control(std::string_view text) {
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\t') || byte == 0x7f)
      return true;
  }
  return false;
}

bool is_token_character(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

bool is_header_name(std::string_view name) {
  if (name.empty())
    return false;
  for (char c : name)
    if (!is_token_character(c))
      return false;
  return true;
}

} // namespace

const char *reason_phrase(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 202:
    return "Accepted";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 409:
    return "Conflict";
  case 413:
    return "Content Too Large";
  case 414:
    return "URI Too Long";
  case 429:
    return "Too Many Requests";
  case 431:
    return "Request Header Fields Too Large";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  case 505:
    return "HTTP Version Not Supported";
  default:
    return "Error";
  }
}

std::string response_head(int status, const std::string &content_type, std::size_t content_length,
                          const std::map<std::string, std::string> &headers, bool close) {
  // A status outside 100..999 would not be three digits.
  const int code = status >= 100 && status <= 999 ? status : 500;
  std::string head = "HTTP/1.1 " + std::to_string(code) + " " + reason_phrase(code) + "\r\n";
  if (!has_control(content_type))
    head += "Content-Type: " + content_type + "\r\n";
  head += "Content-Length: " + std::to_string(content_length) + "\r\nCache-Control: no-store\r\n";
  for (const auto &[name, value] : headers)
    if (is_header_name(name) && !has_control(value))
      head += name + ": " + value + "\r\n";
  if (close)
    head += "Connection: close\r\n";
  head += "\r\n";
  return head;
}

} // namespace neutracer
