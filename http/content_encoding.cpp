// SPDX-License-Identifier: Apache-2.0
#include "http/content_encoding.h"

#include "common/text.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <zlib.h>

namespace neutracer {
namespace {

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// A weight of zero ("q=0", "q=0.000") refuses the coding; anything else, or none, accepts it.
bool refused_by_weight(std::string_view parameters) {
  while (!parameters.empty()) {
    const auto end = parameters.find(';');
    const auto parameter = trim(parameters.substr(0, end));
    parameters = end == std::string_view::npos ? std::string_view{} : parameters.substr(end + 1);
    if (parameter.size() < 2 || std::tolower(static_cast<unsigned char>(parameter[0])) != 'q' ||
        parameter[1] != '=')
      continue;
    const auto value = parameter.substr(2);
    return !value.empty() && value.find_first_not_of("0.") == std::string_view::npos;
  }
  return false;
}

bool compressible(const std::string &content_type) {
  return content_type.starts_with("text/") || content_type.starts_with("application/json");
}

} // namespace

bool accepts_gzip(std::string_view accept_encoding) {
  bool gzip = false, wildcard = false, gzip_named = false;
  while (!accept_encoding.empty()) {
    const auto end = accept_encoding.find(',');
    const auto item = trim(accept_encoding.substr(0, end));
    accept_encoding =
        end == std::string_view::npos ? std::string_view{} : accept_encoding.substr(end + 1);
    const auto semicolon = item.find(';');
    const auto coding = trim(item.substr(0, semicolon));
    const auto parameters =
        semicolon == std::string_view::npos ? std::string_view{} : item.substr(semicolon + 1);
    if (equals_ignoring_case(coding, "gzip") || equals_ignoring_case(coding, "x-gzip")) {
      gzip_named = true;
      gzip = !refused_by_weight(parameters);
    } else if (coding == "*") {
      wildcard = !refused_by_weight(parameters);
    }
  }
  return gzip_named ? gzip : wildcard;
}

struct GzipWriter::Stream {
  z_stream z{};
};

GzipWriter::GzipWriter(std::size_t expected_input_bytes) : stream_(std::make_unique<Stream>()) {
  // 15 + 16: a gzip header and trailer around the deflate stream.
  // Fastest level: a 1 000-process scrape is 11 MB, and the default level took ~50 ms more than
  // sending it plain on the CPU VM, for a ratio of 31 instead of about 20.
  if (deflateInit2(&stream_->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip: deflateInit2 failed");
  // Grown as needed from a sixteenth of the input (text compresses 20-30 times here), not
  // deflateBound's whole size: that buffer was filled with zeros, megabytes per scrape.
  out_.resize(expected_input_bytes / 16 + 4096);
}

GzipWriter::~GzipWriter() { deflateEnd(&stream_->z); }

void GzipWriter::deflate_all(std::string_view data, bool finish) {
  auto &z = stream_->z;
  const int flush = finish ? Z_FINISH : Z_NO_FLUSH;
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  // Until the data is consumed, or the stream finished.
  for (bool more = true; more;) {
    if (used_ == out_.size())
      out_.resize(out_.size() * 2);
    z.next_out = reinterpret_cast<Bytef *>(out_.data() + used_);
    z.avail_out = static_cast<uInt>(out_.size() - used_);
    const uInt room = z.avail_out;
    const uInt input = z.avail_in;
    const int status = deflate(&z, flush);
    used_ = out_.size() - z.avail_out;
    if (status == Z_STREAM_ERROR)
      throw std::runtime_error("gzip: deflate failed");
    more = finish ? status != Z_STREAM_END : z.avail_out == 0 || z.avail_in > 0;
    const bool progress = z.avail_out != room || z.avail_in != input;
    if (more && !progress && z.avail_out > 0)
      throw std::runtime_error("gzip: deflate made no progress"); // never with room to write
  }
}

void GzipWriter::write(std::string_view data) {
  if (!data.empty())
    deflate_all(data, false);
}

std::string GzipWriter::finish() && {
  deflate_all({}, true);
  out_.resize(used_);
  return std::move(out_);
}

std::string gzip_compress(std::initializer_list<std::string_view> parts) {
  std::size_t total = 0;
  for (const auto part : parts)
    total += part.size();
  GzipWriter gzip(total);
  for (const auto part : parts)
    gzip.write(part);
  return std::move(gzip).finish();
}

std::string gzip_compress(std::string_view data) { return gzip_compress({data}); }

std::string gunzip(std::string_view data) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK)
    throw std::runtime_error("gunzip: inflateInit2 failed");
  // The trailer's last four bytes hold the size (mod 2^32): one buffer of the right size rather
  // than a doubling one, megabytes copied over.
  std::size_t expected = 0;
  if (data.size() >= 18)
    for (int i = 1; i <= 4; ++i)
      expected = expected << 8 | static_cast<unsigned char>(data[data.size() - i]);
  constexpr std::size_t kMostExpected = std::size_t{256} << 20; // when the trailer is garbage
  std::string out(std::clamp<std::size_t>(expected, 1, kMostExpected), '\0');
  std::size_t used = 0;
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  int status = Z_OK;
  while (status == Z_OK) {
    if (used == out.size())
      out.resize(out.size() * 2);
    stream.next_out = reinterpret_cast<Bytef *>(out.data() + used);
    stream.avail_out = static_cast<uInt>(out.size() - used);
    status = inflate(&stream, Z_NO_FLUSH);
    used = out.size() - stream.avail_out;
  }
  const bool whole = status == Z_STREAM_END && stream.avail_in == 0;
  inflateEnd(&stream);
  if (!whole)
    throw std::runtime_error("gunzip: not one whole gzip stream");
  out.resize(used);
  return out;
}

HttpResponse encode_for_client(std::string_view accept_encoding, HttpResponse response) {
  if (response.deflated_prefix) {
    // /metrics: sent gzip-encoded without compressing it again, or left for the writer to
    // inflate piece by piece for a client that does not take gzip.
    response.headers["Vary"] = "Accept-Encoding";
    if (accepts_gzip(accept_encoding)) {
      const auto prefix = std::move(response.deflated_prefix);
      response.body = gzip_after(*prefix, response.whole_body());
      response.shared_prefix = nullptr;
      response.headers["Content-Encoding"] = "gzip";
    }
    return response;
  }
  if (response.status != 200 || !compressible(response.content_type))
    return response;
  response.headers["Vary"] = "Accept-Encoding";
  if (response.body_size() < kGzipMinBytes || !accepts_gzip(accept_encoding))
    return response;
  response.body = gzip_compress(
      {response.shared_prefix ? std::string_view(*response.shared_prefix) : std::string_view(),
       response.body});
  response.shared_prefix = nullptr;
  response.headers["Content-Encoding"] = "gzip";
  return response;
}

} // namespace neutracer
