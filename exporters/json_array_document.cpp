// SPDX-License-Identifier: Apache-2.0
#include "exporters/json_array_document.h"

namespace neutracer {
namespace {

// Each element sits two levels deep: four spaces before each of its lines.
constexpr std::string_view kElementIndent = "    ";

} // namespace

JsonArrayDocument::JsonArrayDocument(const std::string &key, std::size_t reserve_bytes) {
  text_.reserve(reserve_bytes);
  // The key as dump() writes it: quoted and escaped.
  text_ += "{\n  " +
           nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           ": [";
}

void JsonArrayDocument::add(const nlohmann::json &element) {
  text_ += empty_ ? "\n" : ",\n";
  empty_ = false;
  // Strings are escaped in the dump: every '\n' in it ends a line of the layout.
  const auto dumped = element.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  text_ += kElementIndent;
  std::size_t line = 0;
  for (std::size_t end = dumped.find('\n'); end != std::string::npos;
       line = end + 1, end = dumped.find('\n', line)) {
    text_.append(dumped, line, end + 1 - line);
    text_ += kElementIndent;
  }
  text_.append(dumped, line);
}

std::string JsonArrayDocument::finish() && {
  text_ += empty_ ? "]\n}\n" : "\n  ]\n}\n";
  return std::move(text_);
}

} // namespace neutracer
