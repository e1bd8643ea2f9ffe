// SPDX-License-Identifier: Apache-2.0
#pragma once
// A JSON document {"<key>": [...]} built one element at a time, in exactly the text nlohmann's
// dump(2) of the whole document gives (invalid UTF-8 replaced), without a DOM of the whole:
// at 1 000 processes the DOM of /api/v1/kernels took ~25 MB for a 6 MB text, every time
// the document was rebuilt.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

namespace neutracer {

// Pieces a document is passed on in (take_text()): big enough for zlib, small next to the
// documents (megabytes at 1 000 processes).
inline constexpr std::size_t kJsonPieceBytes = 64 << 10;

class JsonArrayDocument {
public:
  // `reserve_bytes`: room for the text up front (a document as big as the last one), so that it
  // is not copied each time it outgrows its buffer.
  explicit JsonArrayDocument(const std::string &key, std::size_t reserve_bytes = 0);
  void add(const nlohmann::json &element);
  // The text written so far, handed over: the document can be passed on (compressed, say) in
  // pieces, never held whole. finish() gives the rest.
  std::string take_text() { return std::exchange(text_, {}); }
  // Bytes written and not taken yet.
  std::size_t size() const { return text_.size(); }
  // The document, with a final newline.
  std::string finish() &&;

private:
  std::string text_;
  bool empty_ = true;
};

} // namespace neutracer
