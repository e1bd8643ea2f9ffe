// SPDX-License-Identifier: Apache-2.0
#pragma once
// Text kept deflated between scrapes, for answers that go on after it. The scan's /metrics text
// is 7.5 MB at 1 000 processes and about 0.3 MB deflated; a scrape adds the daemon's own
// families (rendered per request) after it. Kept as a raw deflate stream flushed to a byte
// boundary but not ended, with its CRC-32 and length, a gzip answer is the gzip header, these
// bytes, the request's own text deflated on its own, and a trailer that combines both CRCs: the
// scan's text is neither compressed per request nor held uncompressed (BENCHMARKS.md, "Daemon
// memory at 1 000 processes").
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace neutracer {

struct DeflatedText {
  std::string deflate;    // raw deflate blocks, sync-flushed, no final block
  std::uint32_t crc = 0;  // CRC-32 of the text
  std::uint64_t size = 0; // bytes of text
};

// `text` deflated (zlib, fastest level); throws std::runtime_error if zlib fails.
DeflatedText deflate_text(std::string_view text);
// The text back, handed to `write` a piece of at most 64 KiB at a time (a plain scrape of 7.5 MB
// is sent without holding it whole); throws std::runtime_error when `deflated` does not hold
// `size` bytes, possibly after some pieces were written.
void inflate_text(const DeflatedText &deflated,
                  const std::function<void(std::string_view piece)> &write);
// The text back, whole.
std::string inflate_text(const DeflatedText &deflated);
// One whole gzip stream of the text of `prefix` followed by `suffix`.
std::string gzip_after(const DeflatedText &prefix, std::string_view suffix);

} // namespace neutracer
