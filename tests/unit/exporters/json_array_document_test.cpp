// SPDX-License-Identifier: Apache-2.0
// /api/v1/kernels and /api/v1/processes are written an element at a time: the text must be what
// nlohmann's dump(2) of the whole document was.
#include "exporters/json_array_document.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace neutracer {
namespace {

std::string whole_dump(const std::string &key, const std::vector<nlohmann::json> &elements) {
  auto array = nlohmann::json::array();
  for (const auto &element : elements)
    array.push_back(element);
  return nlohmann::json{{key, array}}.dump(2, ' ', false,
                                           nlohmann::json::error_handler_t::replace) +
         "\n";
}

std::string element_at_a_time(const std::string &key, const std::vector<nlohmann::json> &elements) {
  JsonArrayDocument document(key);
  for (const auto &element : elements)
    document.add(element);
  return std::move(document).finish();
}

TEST(JsonArrayDocument, WritesWhatADumpOfTheWholeDocumentWrites) {
  const std::vector<nlohmann::json> elements{
      {{"pid", 1},
       {"comm", "a\nb\"c"},
       {"kernels",
        {{{"kernel", "k"}, {"launches", 3}, {"full_names", {"k(int)", "k(float)"}}},
         {{"kernel", "[unresolved]"}, {"launches", 0}, {"full_names", nlohmann::json::array()}}}},
       {"memory", {{"device", {{"used_bytes", 1.5}}}}},
       {"empty", nlohmann::json::object()}},
      {{"pid", 2}, {"comm", std::string("bad \xff utf-8")}, {"kernels", nlohmann::json::array()}},
      42,
      "a string element"};
  EXPECT_EQ(element_at_a_time("processes", elements), whole_dump("processes", elements));
  EXPECT_EQ(element_at_a_time("processes", {elements[0]}), whole_dump("processes", {elements[0]}));
}

TEST(JsonArrayDocument, TakenInPiecesItIsTheSameText) {
  const std::vector<nlohmann::json> elements{{{"a", 1}}, {{"b", {1, 2}}}, "c"};
  JsonArrayDocument document("k");
  std::string pieces;
  for (const auto &element : elements) {
    document.add(element);
    EXPECT_GT(document.size(), 0u);
    pieces += document.take_text();
    EXPECT_EQ(document.size(), 0u);
  }
  pieces += std::move(document).finish();
  EXPECT_EQ(pieces, whole_dump("k", elements));
}

TEST(JsonArrayDocument, AnEmptyArray) {
  EXPECT_EQ(element_at_a_time("processes", {}), "{\n  \"processes\": []\n}\n");
  EXPECT_EQ(element_at_a_time("processes", {}), whole_dump("processes", {}));
  EXPECT_EQ(element_at_a_time("a \"key\"", {}), whole_dump("a \"key\"", {}));
}

} // namespace
} // namespace neutracer
