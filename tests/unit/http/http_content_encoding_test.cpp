// SPDX-License-Identifier: Apache-2.0
// gzip for scrapes: which Accept-Encoding values accept it, which answers are encoded, and a
// real server's gzip answer decoding back to the plain one.
#include "http/content_encoding.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <memory>
#include <string>

#include "http/http_server.h"
#include "http_test_client.h"

#include "sample_exposition.h"

namespace neutracer {
namespace {

std::string gunzip(const std::string &data) {
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK)
    return "<inflateInit2 failed>";
  std::string out;
  char buffer[16384];
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  int status = Z_OK;
  while (status == Z_OK) {
    stream.next_out = reinterpret_cast<Bytef *>(buffer);
    stream.avail_out = sizeof buffer;
    status = inflate(&stream, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - stream.avail_out);
  }
  inflateEnd(&stream);
  return status == Z_STREAM_END ? out : "<not a complete gzip stream>";
}

std::string exposition(int series) { return test::sample_exposition(series); }

TEST(AcceptsGzip, ByNameOrWildcardUnlessWeightedZero) {
  EXPECT_TRUE(accepts_gzip("gzip"));
  EXPECT_TRUE(accepts_gzip("gzip, deflate"));
  EXPECT_TRUE(accepts_gzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(accepts_gzip("identity, *;q=0.1"));
  EXPECT_TRUE(accepts_gzip("x-gzip"));
  EXPECT_FALSE(accepts_gzip(""));
  EXPECT_FALSE(accepts_gzip("deflate, br"));
  EXPECT_FALSE(accepts_gzip("gzip;q=0"));
  EXPECT_FALSE(accepts_gzip("gzip; q=0.000"));
  EXPECT_FALSE(accepts_gzip("*;q=0"));
  EXPECT_FALSE(accepts_gzip("*, gzip;q=0")); // naming gzip overrides the wildcard
  EXPECT_FALSE(accepts_gzip("gzipx, xgzip"));
}

TEST(GzipCompress, RoundTripsAndShrinksAScrape) {
  const auto text = exposition(1000);
  const auto packed = gzip_compress(text);
  EXPECT_LT(packed.size() * 5, text.size());
  EXPECT_EQ(gunzip(packed), text);
  EXPECT_EQ(gunzip(gzip_compress("")), "");
}

TEST(Gunzip, UnpacksWhatGzipCompressPackedAndRefusesTheRest) {
  const auto text = exposition(3000);
  EXPECT_EQ(neutracer::gunzip(gzip_compress(text)), text);
  EXPECT_EQ(neutracer::gunzip(gzip_compress("")), "");
  const auto packed = gzip_compress(text);
  EXPECT_THROW((void)neutracer::gunzip(packed.substr(0, packed.size() / 2)), std::runtime_error);
  EXPECT_THROW((void)neutracer::gunzip(packed + "trailing"), std::runtime_error);
  EXPECT_THROW((void)neutracer::gunzip("not gzip"), std::runtime_error);
}

TEST(GzipWriter, WrittenInPiecesOneStreamOfTheirText) {
  const auto text = exposition(3000);
  GzipWriter gzip; // a first buffer far too small: it grows
  for (std::size_t at = 0; at < text.size(); at += 1000)
    gzip.write(std::string_view(text).substr(at, 1000));
  gzip.write("");
  EXPECT_EQ(gunzip(std::move(gzip).finish()), text);
  EXPECT_EQ(gunzip(GzipWriter().finish()), "");
}

TEST(GzipCompress, PartsMakeOneStreamOfTheirText) {
  const auto text = exposition(3000); // more than the first output buffer takes: it grows
  const std::string_view whole(text);
  const auto cut = whole.size() / 3;
  EXPECT_EQ(gunzip(gzip_compress({whole.substr(0, cut), "", whole.substr(cut)})), text);
  EXPECT_EQ(gunzip(gzip_compress({"", ""})), "");
  EXPECT_EQ(gunzip(gzip_compress({whole, ""})), text);
}

TEST(EncodeForClient, OnlySuccessfulTextAnswersWorthIt) {
  const HttpResponse big{200, "text/plain; version=0.0.4; charset=utf-8", exposition(100), {}};
  const auto encoded = encode_for_client("gzip", big);
  EXPECT_EQ(encoded.headers.at("Content-Encoding"), "gzip");
  EXPECT_EQ(encoded.headers.at("Vary"), "Accept-Encoding");
  EXPECT_EQ(gunzip(encoded.body), big.body);

  const auto refused = encode_for_client("identity", big);
  EXPECT_EQ(refused.body, big.body);
  EXPECT_FALSE(refused.headers.contains("Content-Encoding"));
  EXPECT_EQ(refused.headers.at("Vary"), "Accept-Encoding");

  const HttpResponse json{
      200, "application/json", "{\"processes\": [" + std::string(2000, ' ') + "]}", {}};
  EXPECT_EQ(encode_for_client("gzip", json).headers.at("Content-Encoding"), "gzip");

  // A shared prefix is encoded with the body, and then no longer sent apart.
  HttpResponse shared{200, "text/plain", "tail\n", {}};
  shared.shared_prefix = std::make_shared<const std::string>(exposition(100));
  const auto both = encode_for_client("gzip", shared);
  EXPECT_EQ(both.shared_prefix, nullptr);
  EXPECT_EQ(gunzip(both.body), exposition(100) + "tail\n");
  EXPECT_EQ(encode_for_client("identity", shared).whole_body(), exposition(100) + "tail\n");

  const HttpResponse small{200, "text/plain", "ok\n", {}};
  EXPECT_EQ(encode_for_client("gzip", small).body, "ok\n");
  const HttpResponse missing{404, "text/plain", std::string(4096, 'x'), {}};
  EXPECT_TRUE(encode_for_client("gzip", missing).headers.empty());
  const HttpResponse binary{200, "image/png", std::string(4096, 'x'), {}};
  EXPECT_TRUE(encode_for_client("gzip", binary).headers.empty());
}

TEST(EncodeForClient, ARealServerAnswersGzipWhenAsked) {
  const auto text = exposition(2000);
  const auto cut = text.size() / 2;
  const auto prefix = std::make_shared<const std::string>(text.substr(0, cut));
  const int port = http_test::free_port();
  // Half of the text shared, as /metrics sends a snapshot's text, half the handler's own.
  HttpServer server(
      "127.0.0.1:" + std::to_string(port),
      {{"/metrics", [&](const std::string &) {
          return HttpResponse{
              200, "text/plain; version=0.0.4; charset=utf-8", text.substr(cut), {}, prefix};
        }}});
  const auto plain = http_test::http_exchange(port, http_test::get("/metrics"));
  ASSERT_TRUE(plain);
  EXPECT_EQ(http_test::header(*plain, "Content-Encoding"), "<absent>");
  EXPECT_EQ(plain->substr(plain->find("\r\n\r\n") + 4), text);
  EXPECT_EQ(http_test::header(*plain, "Content-Length"), std::to_string(text.size()));

  const auto packed = http_test::http_exchange(
      port, http_test::get("/metrics", "GET", "Accept-Encoding: gzip\r\n"));
  ASSERT_TRUE(packed);
  EXPECT_EQ(http_test::status_code(*packed), 200);
  EXPECT_EQ(http_test::header(*packed, "Content-Encoding"), "gzip");
  EXPECT_EQ(http_test::header(*packed, "Vary"), "Accept-Encoding");
  const auto body = packed->substr(packed->find("\r\n\r\n") + 4);
  EXPECT_EQ(http_test::header(*packed, "Content-Length"), std::to_string(body.size()));
  EXPECT_EQ(gunzip(body), text);

  // HEAD says what a GET would get, without the body.
  const auto head = http_test::http_exchange(
      port, http_test::get("/metrics", "HEAD", "Accept-Encoding: gzip\r\n"));
  ASSERT_TRUE(head);
  EXPECT_EQ(http_test::header(*head, "Content-Length"), std::to_string(body.size()));
  EXPECT_EQ(head->substr(head->find("\r\n\r\n") + 4), "");
}

// /metrics as the daemon sends it: the scan's text kept deflated, the daemon's own families after
// it. gzip clients get it without a second compression, others inflated as it is written.
TEST(EncodeForClient, ARealServerSendsADeflatedPrefixEitherWay) {
  const auto text = exposition(20000);
  const auto cut = text.size() - 3000;
  const auto deflated = std::make_shared<const DeflatedText>(deflate_text(text.substr(0, cut)));
  const int port = http_test::free_port();
  HttpServer server("127.0.0.1:" + std::to_string(port),
                    {{"/metrics", [&](const std::string &) {
                        return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8",
                                            text.substr(cut), {}, nullptr, deflated};
                      }}});
  const auto plain = http_test::http_exchange(port, http_test::get("/metrics"));
  ASSERT_TRUE(plain);
  EXPECT_EQ(http_test::header(*plain, "Content-Encoding"), "<absent>");
  EXPECT_EQ(http_test::header(*plain, "Content-Length"), std::to_string(text.size()));
  EXPECT_EQ(plain->substr(plain->find("\r\n\r\n") + 4), text);

  const auto packed = http_test::http_exchange(
      port, http_test::get("/metrics", "GET", "Accept-Encoding: gzip\r\n"));
  ASSERT_TRUE(packed);
  EXPECT_EQ(http_test::header(*packed, "Content-Encoding"), "gzip");
  const auto body = packed->substr(packed->find("\r\n\r\n") + 4);
  EXPECT_EQ(http_test::header(*packed, "Content-Length"), std::to_string(body.size()));
  EXPECT_LT(body.size() * 10, text.size());
  EXPECT_EQ(gunzip(body), text);

  const auto head = http_test::http_exchange(port, http_test::get("/metrics", "HEAD"));
  ASSERT_TRUE(head);
  EXPECT_EQ(http_test::header(*head, "Content-Length"), std::to_string(text.size()));
  EXPECT_EQ(head->substr(head->find("\r\n\r\n") + 4), "");
}

} // namespace
} // namespace neutracer
