// SPDX-License-Identifier: Apache-2.0
// The scan's /metrics text kept deflated, and the gzip answers built after it.
#include "http/deflated_text.h"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>

#include "http/content_encoding.h"

#include "sample_exposition.h"

namespace neutracer {
namespace {

std::string exposition(int series) { return test::sample_exposition(series); }

std::string random_bytes(std::size_t size, unsigned seed) {
  std::mt19937 random(seed);
  std::string bytes(size, '\0');
  for (auto &byte : bytes)
    byte = static_cast<char>(random() & 0xff);
  return bytes;
}

TEST(DeflatedText, InflatesBackToItsTextAndShrinksAScrape) {
  for (const auto &text : {std::string(), std::string("x"), exposition(20000),
                           random_bytes(300000, 1)}) {
    const auto deflated = deflate_text(text);
    EXPECT_EQ(deflated.size, text.size());
    EXPECT_EQ(inflate_text(deflated), text);
  }
  const auto scrape = exposition(20000);
  EXPECT_LT(deflate_text(scrape).deflate.size() * 10, scrape.size());
}

TEST(DeflatedText, InflatesInPiecesOfAtMost64KiB) {
  const auto text = exposition(40000); // ~3 MB
  std::string joined;
  int pieces = 0;
  inflate_text(deflate_text(text), [&](std::string_view piece) {
    EXPECT_LE(piece.size(), 64u * 1024);
    EXPECT_FALSE(piece.empty());
    joined += piece;
    ++pieces;
  });
  EXPECT_EQ(joined, text);
  EXPECT_GE(pieces, static_cast<int>(text.size() / (64 * 1024)));
}

TEST(DeflatedText, GzipAfterIsOneWholeStreamOfBothTexts) {
  // gunzip checks the trailer's CRC-32 and length against what it inflated.
  const std::string suffixes[] = {"", "# HELP process_cpu_seconds_total x\n", exposition(3000),
                                  random_bytes(70000, 2)};
  for (const auto &prefix : {std::string(), exposition(20000), random_bytes(100000, 3)})
    for (const auto &suffix : suffixes)
      EXPECT_EQ(gunzip(gzip_after(deflate_text(prefix), suffix)), prefix + suffix)
          << prefix.size() << " + " << suffix.size();
}

TEST(DeflatedText, ACutOrWrongSizedStreamIsRefused) {
  const auto text = exposition(2000);
  auto deflated = deflate_text(text);
  auto longer = deflated;
  longer.size += 1;
  EXPECT_THROW(inflate_text(longer), std::runtime_error);
  auto shorter = deflated;
  shorter.size -= 1;
  EXPECT_THROW(inflate_text(shorter), std::runtime_error);
  auto cut = deflated;
  cut.deflate.resize(cut.deflate.size() / 2);
  EXPECT_THROW(inflate_text(cut), std::runtime_error);
  auto garbage = deflated;
  garbage.deflate = random_bytes(garbage.deflate.size(), 4);
  EXPECT_THROW(inflate_text(garbage), std::runtime_error);
}

TEST(EncodeForClient, ADeflatedPrefixIsSentGzippedAsItIsOrInflated) {
  const auto scan = exposition(5000);
  const std::string own = "# HELP process_open_fds x\n# TYPE process_open_fds gauge\nprocess_open_fds 9\n";
  const auto deflated = std::make_shared<const DeflatedText>(deflate_text(scan));
  const HttpResponse answer{200, "text/plain; version=0.0.4; charset=utf-8", own, {}, nullptr,
                            deflated};
  EXPECT_EQ(answer.body_size(), scan.size() + own.size());
  EXPECT_EQ(answer.whole_body(), scan + own);

  const auto gzipped = encode_for_client("gzip", answer);
  EXPECT_EQ(gzipped.headers.at("Content-Encoding"), "gzip");
  EXPECT_EQ(gzipped.headers.at("Vary"), "Accept-Encoding");
  EXPECT_EQ(gzipped.deflated_prefix, nullptr);
  // The scan's deflate bytes are in the answer as they were kept: not compressed again.
  EXPECT_NE(gzipped.body.find(deflated->deflate), std::string::npos);
  EXPECT_EQ(gunzip(gzipped.body), scan + own);

  for (const auto *refused : {"", "identity", "gzip;q=0"}) {
    const auto plain = encode_for_client(refused, answer);
    EXPECT_EQ(plain.headers.count("Content-Encoding"), 0u) << refused;
    // Left deflated: the server's writer inflates it as it sends it.
    EXPECT_EQ(plain.deflated_prefix, deflated) << refused;
    EXPECT_EQ(plain.body, own) << refused;
    EXPECT_EQ(plain.whole_body(), scan + own) << refused;
  }
}

} // namespace
} // namespace neutracer
