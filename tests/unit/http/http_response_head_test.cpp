// SPDX-License-Identifier: Apache-2.0
// response_head(): what goes before every body the endpoint sends.
#include "http/response_head.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace neutracer {
namespace {

TEST(ResponseHead, StatusLineIsFixedText) {
  EXPECT_EQ(response_head(200, "text/plain", 5, {}),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n"
            "Cache-Control: no-store\r\n\r\n");
  EXPECT_TRUE(response_head(505, "text/plain", 0, {}, true)
                  .starts_with("HTTP/1.1 505 HTTP Version Not Supported\r\n"));
  EXPECT_TRUE(
      response_head(429, "text/plain", 0, {}).starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
  EXPECT_TRUE(response_head(418, "text/plain", 0, {}).starts_with("HTTP/1.1 418 Error\r\n"));
  // Not three digits: a server bug, answered as 500 rather than written as is.
  EXPECT_TRUE(response_head(-1, "text/plain", 0, {}).starts_with("HTTP/1.1 500 Internal"));
  EXPECT_TRUE(response_head(1000, "text/plain", 0, {}).starts_with("HTTP/1.1 500 Internal"));
}

TEST(ResponseHead, ConnectionCloseWhenAsked) {
  const std::string head = response_head(400, "text/plain", 3, {}, true);
  EXPECT_TRUE(head.ends_with("Connection: close\r\n\r\n")) << head;
  EXPECT_EQ(response_head(400, "text/plain", 3, {}).find("Connection"), std::string::npos);
}

TEST(ResponseHead, HeadersWithLineBreaksOrBadNamesAreLeftOut) {
  const std::map<std::string, std::string> headers = {{"Allow", "GET, HEAD"},
                                                      {"X-Split", "a\r\nSet-Cookie: x"},
                                                      {"X-Bare-Cr", "a\rb"},
                                                      {"X-Nul", std::string("a\0b", 3)},
                                                      {"Set-Cookie: x\r\nX-Name", "v"},
                                                      {"", "v"},
                                                      {"X-Tab", "a\tb"}};
  const std::string head = response_head(200, "text/plain\r\nSet-Cookie: y", 0, headers);
  EXPECT_EQ(head, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nCache-Control: no-store\r\n"
                  "Allow: GET, HEAD\r\nX-Tab: a\tb\r\n\r\n");
}

} // namespace
} // namespace neutracer
