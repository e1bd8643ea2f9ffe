// SPDX-License-Identifier: Apache-2.0
#pragma once
// gzip for the answers that are worth it: Prometheus asks for it on every scrape
// (Accept-Encoding: gzip), and a scrape of many processes is megabytes of repetitive text.
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include "http/http_server.h"

namespace neutracer {

// Whether an Accept-Encoding value accepts gzip (RFC 9110: "gzip" or "*" without q=0).
bool accepts_gzip(std::string_view accept_encoding);

// A gzip stream (zlib, fastest level) written a piece at a time: a document need not be held
// whole before it is compressed.
class GzipWriter {
public:
  // `expected_input_bytes` sizes the first output buffer.
  explicit GzipWriter(std::size_t expected_input_bytes = 0);
  ~GzipWriter();
  GzipWriter(const GzipWriter &) = delete;
  GzipWriter &operator=(const GzipWriter &) = delete;

  void write(std::string_view data);
  // The whole stream; the writer is done with.
  std::string finish() &&;

private:
  struct Stream; // zlib's z_stream
  void deflate_all(std::string_view data, bool finish);

  std::unique_ptr<Stream> stream_;
  std::string out_;
  std::size_t used_ = 0;
};

// The gzip stream of `data` (zlib, fastest level).
std::string gzip_compress(std::string_view data);
// The gzip stream of the parts one after the other.
std::string gzip_compress(std::initializer_list<std::string_view> parts);
// What a gzip stream holds; throws std::runtime_error when it is not one whole stream.
std::string gunzip(std::string_view data);

// Bodies smaller than this go out as they are: gzip's header and trailer outweigh the gain.
inline constexpr std::size_t kGzipMinBytes = 1024;

// `response` gzip-encoded when the client accepts it and it is a successful text or JSON
// answer of at least kGzipMinBytes, or has a deflated prefix; as it is otherwise (a deflated
// prefix is then inflated as it is written). Either way it says that the
// representation depends on Accept-Encoding (Vary), so caches keep them apart.
HttpResponse encode_for_client(std::string_view accept_encoding, HttpResponse response);

} // namespace neutracer
