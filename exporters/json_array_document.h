#pragma once
// A JSON document {"<key>": [...]} built one element at a time, in exactly the text nlohmann's
// dump(2) of the whole document gives (invalid UTF-8 replaced), without a DOM of the whole:
// at 1 000 processes the DOM of /api/v1/kernels took ~25 MB for a 6 MB text, every time
// the document was rebuilt.
#include <nlohmann/json.hpp>
#include <string>

namespace neutracer {

class JsonArrayDocument {
public:
  explicit JsonArrayDocument(const std::string &key);
  void add(const nlohmann::json &element);
  // The document, with a final newline.
  std::string finish() &&;

private:
  std::string text_;
  bool empty_ = true;
};

} // namespace neutracer
