// SPDX-License-Identifier: Apache-2.0
#pragma once
// The status line and headers of every response the endpoint writes, its refusals of malformed
// requests included. Only this server's own text goes in: a fixed "HTTP/1.1", a reason phrase
// from a table, and header fields checked for line breaks, so no client byte can start a line.
#include <cstddef>
#include <map>
#include <string>

namespace neutracer {

// "OK", "Not Found", ...; "Error" for a status this server never sends.
const char *reason_phrase(int status);

// "HTTP/1.1 STATUS REASON\r\n", Content-Type, Content-Length, Cache-Control: no-store, `headers`,
// "Connection: close" when `close`, and the blank line. A header whose name or value holds a
// control character (CR and LF included) is left out rather than written.
std::string response_head(int status, const std::string &content_type, std::size_t content_length,
                          const std::map<std::string, std::string> &headers, bool close = false);

} // namespace neutracer
