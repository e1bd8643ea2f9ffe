// SPDX-License-Identifier: Apache-2.0
#pragma once
// Checks on a request that civetweb accepts but this server refuses with 400.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace neutracer {

// Why the path (as sent, before percent-decoding; no query) is refused, or nullopt. Every
// path served is plain ASCII, so only '/' and RFC 3986 unreserved characters are accepted:
// no percent-encoding (hides NUL and "../"), no "." or ".." segments.
std::optional<std::string> request_path_problem(std::string_view raw_path);

// Limits on the request line and headers. civetweb reads up to kCivetwebRequestBuffer bytes and
// keeps the first kCivetwebMaxHeaders headers; anything larger it refuses itself with a plain
// 400, so the server checks its own, smaller limits to answer 431 for "too large".
inline constexpr std::size_t kMaxRequestHeadBytes = 16384;
inline constexpr std::size_t kCivetwebRequestBuffer = 65536;
inline constexpr std::size_t kMaxRequestHeaders = 63;
inline constexpr std::size_t kCivetwebMaxHeaders = 64;

// Why the request line and headers are too large (more than kMaxRequestHeadBytes in all, or more
// than kMaxRequestHeaders headers), or nullopt. `header_count` saturates at civetweb's 64.
std::optional<std::string> request_head_problem(std::size_t head_bytes, std::size_t header_count);

// Why the end of the request line is refused, or nullopt. `terminator_bytes`: how many bytes
// civetweb consumed between the HTTP version and the first header name (nullopt when there is no
// header). civetweb ends the version at a bare CR as at CR LF and then skips any whitespace, so
// "GET / HTTP/1.1\rX: y" would pass as a request with header X; only a CR LF (2 bytes) is
// accepted. A bare LF, which looks the same once civetweb has parsed it, is refused with it;
// two CRs cannot be told from CR LF (civetweb zeroes both in place) and still pass.
std::optional<std::string> request_line_end_problem(std::optional<std::size_t> terminator_bytes);

// Why a request's body is refused, or nullopt: GET and HEAD must not carry one (a declared
// Content-Length above 0 or any Transfer-Encoding). `content_length` is -1 when not given.
std::optional<std::string> request_body_problem(std::string_view method, long long content_length,
                                                bool has_transfer_encoding);

} // namespace neutracer
