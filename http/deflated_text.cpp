// SPDX-License-Identifier: Apache-2.0
#include "http/deflated_text.h"

#include <stdexcept>
#include <zlib.h>

namespace neutracer {
namespace {

// Deflates `data` into `out` with `flush` (Z_SYNC_FLUSH: ends on a byte boundary, not final;
// Z_FINISH: ends with the final block). Raw deflate: no zlib or gzip wrapper.
void raw_deflate(std::string_view data, int flush, std::string &out) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflate: deflateInit2 failed");
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  // Text compresses 20-30 times here: start from a sixteenth and grow.
  std::size_t used = out.size();
  out.resize(used + data.size() / 16 + 64);
  int status = Z_OK;
  for (;;) {
    z.next_out = reinterpret_cast<Bytef *>(out.data() + used);
    z.avail_out = static_cast<uInt>(out.size() - used);
    status = deflate(&z, flush);
    used = out.size() - z.avail_out;
    if (status == Z_STREAM_ERROR)
      break;
    // Done when the stream ended, or, for a sync flush, when all input went in and the flush
    // left room in the output (so nothing of it is pending).
    if (flush == Z_FINISH ? status == Z_STREAM_END : z.avail_in == 0 && z.avail_out > 0)
      break;
    if (z.avail_out == 0)
      out.resize(out.size() * 2);
  }
  deflateEnd(&z);
  if (status == Z_STREAM_ERROR)
    throw std::runtime_error("deflate: stream error");
  out.resize(used);
}

void append_le32(std::string &out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
}

std::uint32_t crc_of(std::string_view data) {
  return static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef *>(data.data()), static_cast<uInt>(data.size())));
}

} // namespace

DeflatedText deflate_text(std::string_view text) {
  DeflatedText deflated;
  raw_deflate(text, Z_SYNC_FLUSH, deflated.deflate);
  deflated.crc = crc_of(text);
  deflated.size = text.size();
  return deflated;
}

void inflate_text(const DeflatedText &deflated,
                  const std::function<void(std::string_view piece)> &write) {
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK)
    throw std::runtime_error("inflate: inflateInit2 failed");
  char piece[64 * 1024];
  z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(deflated.deflate.data()));
  z.avail_in = static_cast<uInt>(deflated.deflate.size());
  std::uint64_t produced = 0;
  int status = Z_OK;
  // A sync-flushed stream has no end: inflate until the input is used up (then the empty
  // block of the flush is read too) or nothing moves, and never past the text's size.
  while (status == Z_OK && z.avail_in > 0 && produced <= deflated.size) {
    z.next_out = reinterpret_cast<Bytef *>(piece);
    z.avail_out = sizeof piece;
    status = inflate(&z, Z_SYNC_FLUSH);
    const std::size_t size = sizeof piece - z.avail_out;
    produced += size;
    if (size > 0 && produced <= deflated.size)
      write(std::string_view(piece, size));
  }
  const bool whole = (status == Z_OK || status == Z_BUF_ERROR) && z.avail_in == 0 &&
                     produced == deflated.size;
  inflateEnd(&z);
  if (!whole)
    throw std::runtime_error("inflate: the deflated text does not hold its size");
}

std::string inflate_text(const DeflatedText &deflated) {
  std::string out;
  out.reserve(deflated.size);
  inflate_text(deflated, [&](std::string_view piece) { out += piece; });
  return out;
}

std::string gzip_after(const DeflatedText &prefix, std::string_view suffix) {
  // RFC 1952: magic, deflate, no flags, no time, fastest, Unix.
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\x03", 10);
  out.reserve(10 + prefix.deflate.size() + suffix.size() / 8 + 64);
  out += prefix.deflate;
  // A stream of its own: its matches never reach back into the prefix, so it may follow it.
  raw_deflate(suffix, Z_FINISH, out);
  const auto crc = static_cast<std::uint32_t>(
      crc32_combine(prefix.crc, crc_of(suffix), static_cast<z_off_t>(suffix.size())));
  append_le32(out, crc);
  append_le32(out, static_cast<std::uint32_t>(prefix.size + suffix.size()));
  return out;
}

} // namespace neutracer
