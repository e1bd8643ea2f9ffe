// SPDX-License-Identifier: Apache-2.0
#include "exposition/utf8_repair.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "exposition/exposition.h"

namespace neutracer {
namespace {

const std::string kReplacement = "\xef\xbf\xbd";

TEST(Utf8Repair, ValidTextIsUnchanged) {
  for (const std::string &text :
       std::vector<std::string>{"", "python3", "caf\xc3\xa9", "\xe2\x82\xac 5", "\xf0\x9f\x9a\x80",
                                "\xf4\x8f\xbf\xbf", std::string("nul\0inside", 10)}) {
    EXPECT_TRUE(is_valid_utf8(text)) << text;
    EXPECT_EQ(repair_utf8(text), text);
  }
}

TEST(Utf8Repair, EachByteThatStartsNoValidSequenceIsReplaced) {
  EXPECT_EQ(repair_utf8("a\xff"
                        "b"),
            "a" + kReplacement + "b");
  EXPECT_EQ(repair_utf8("\x80\x80"), kReplacement + kReplacement); // lone continuation bytes
  EXPECT_EQ(repair_utf8("\xc3"), kReplacement);                    // truncated at the end
  EXPECT_EQ(repair_utf8("\xc3("), kReplacement + "(");             // continuation missing
}

TEST(Utf8Repair, OverlongSurrogateAndOutOfRangeFormsAreInvalid) {
  for (const std::string &text :
       std::vector<std::string>{"\xc0\xaf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xed\xa0\x80",
                                "\xf4\x90\x80\x80", "\xf5\x80\x80\x80"}) {
    EXPECT_FALSE(is_valid_utf8(text));
    EXPECT_TRUE(is_valid_utf8(repair_utf8(text)));
    EXPECT_EQ(repair_utf8(text).find(text), std::string::npos);
  }
}

TEST(Utf8Repair, AsValidUtf8CopiesOnlyInvalidText) {
  std::string storage;
  const std::string valid = "kernel";
  EXPECT_EQ(as_valid_utf8(valid, storage).data(), valid.data());
  EXPECT_TRUE(storage.empty());
  EXPECT_EQ(as_valid_utf8("k\xfe", storage), "k" + kReplacement);
}

// Found by tests/fuzz/exposition_fuzzer (corpus/exposition/regression_invalid_utf8_label):
// Prometheus refused the whole scrape ("invalid label value") over one such value.
TEST(Utf8Repair, ExpositionRepairsLabelValuesAndHelp) {
  MetricFamily family{.name = "neutracer_cuda_kernel_launches_total",
                      .help = "launches \xff",
                      .type = MetricType::counter,
                      .samples = {},
                      .histograms = {}};
  family.samples.push_back({{{"comm", "a\\b\"\xff\xff"}, {"kernel", "k\xc3"}}, 1});
  std::ostringstream out;
  render_text({family}, out);
  EXPECT_EQ(out.str(), "# HELP neutracer_cuda_kernel_launches_total launches " + kReplacement +
                           "\n# TYPE neutracer_cuda_kernel_launches_total counter\n"
                           "neutracer_cuda_kernel_launches_total{comm=\"a\\\\b\\\"" +
                           kReplacement + kReplacement + "\",kernel=\"k" + kReplacement +
                           "\"} 1\n");
}

} // namespace
} // namespace neutracer
