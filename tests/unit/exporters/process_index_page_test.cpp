// SPDX-License-Identifier: Apache-2.0
// The page that lists processes for /flame and /memory, written out in full: both index pages
// are made by it.
#include "exporters/process_index_page.h"

#include <gtest/gtest.h>

namespace neutracer {
namespace {

TEST(ProcessIndexPage, LinksEachProcessWithItsSummaryInPidOrder) {
  const ProcessId train{42, 1000}, unnamed{7, 2000};
  const auto page = process_index_page(
      "Call sites", "/flame", {{train, "3 sites"}, {unnamed, "1 sites"}}, {{train, "train<&>"}});
  EXPECT_EQ(page, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Call "
                  "sites</title></head>\n<body style=\"font-family:sans-serif\">\n"
                  "<h1>Call sites</h1>\n<ul>\n"
                  "<li><a href=\"/flame?pid=7\">? (pid 7)</a>: 1 sites</li>\n"
                  "<li><a href=\"/flame?pid=42\">train&lt;&amp;&gt; (pid 42)</a>: 3 sites</li>\n"
                  "</ul></body></html>\n");
}

TEST(ProcessIndexPage, NoProcessesGiveAnEmptyList) {
  EXPECT_EQ(process_index_page("GPU memory timelines", "/memory", {}, {}),
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>GPU memory "
            "timelines</title></head>\n<body style=\"font-family:sans-serif\">\n"
            "<h1>GPU memory timelines</h1>\n<ul>\n</ul></body></html>\n");
}

} // namespace
} // namespace neutracer
