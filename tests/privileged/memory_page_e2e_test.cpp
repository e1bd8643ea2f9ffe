// SPDX-License-Identifier: Apache-2.0
// End to end, as root: the memory timeline page of a traced process, checked as HTML and
// rendered in headless Chromium (Debian's `chromium`), whose screenshot is kept for people; the
// page refreshes itself in the browser.
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <gtest/gtest.h>

#include "e2e_fixture.h"

namespace neutracer::test {
namespace {

std::size_t count(const std::string &text, const std::string &what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

class MemoryPageE2E : public DaemonE2E {};

TEST_F(MemoryPageE2E, ShowsAllocationsOverTimeAndFailedAllocations) {
  // Capacity 256 MiB: 8 blocks of 16 MiB, 4 freed, a failed 1 GiB request, 2 more blocks.
  auto scenario =
      run_scenario({},
                   {"alloc:16777216:4", "sleep:300", "alloc:16777216:4", "sleep:300", "free:4",
                    "sleep:300", "oom:1073741824", "sleep:300", "alloc:8388608:2", "sleep:300"},
                   {"NEUTRACER_STANDIN_CAPACITY=268435456"});
  const auto page = http_get(port_, "/memory?pid=" + scenario.pid);
  ASSERT_TRUE(page && page->status == 200);
  EXPECT_NE(page->headers.find("text/html"), std::string::npos);
  EXPECT_EQ(count(page->body, "<rect class=\"live\""), 6u) << page->body;
  EXPECT_EQ(count(page->body, "<rect class=\"freed\""), 4u);
  EXPECT_EQ(count(page->body, "<line class=\"failed\""), 1u);
  EXPECT_NE(page->body.find("failed allocation of 1.0 GiB"), std::string::npos);
  EXPECT_NE(page->body.find("10 allocations recorded, 6 live (80.0 MiB), 1 failed allocations"),
            std::string::npos);

  const auto index = http_get(port_, "/memory");
  ASSERT_TRUE(index && index->status == 200);
  EXPECT_NE(index->body.find("/memory?pid=" + scenario.pid), std::string::npos);
  const auto bad = http_get(port_, "/memory?pid=abc");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  const auto unknown = http_get(port_, "/memory?pid=2147483647");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);

  // Rendered by a real browser: the screenshot must exist and hold a picture, not a blank page
  // (a blank 1200x700 PNG compresses to a few KB).
  const auto png = fs::path(NEUTRACER_BUILD_DIR) / "memory-timeline.png";
  fs::remove(png);
  const std::string command = "chromium --headless --no-sandbox --disable-gpu --hide-scrollbars "
                              "--window-size=1200,700 --screenshot=" +
                              png.string() + " 'http://127.0.0.1:" + std::to_string(port_) +
                              "/memory?pid=" + scenario.pid + "' > " +
                              (dir_ / "chromium.log").string() + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << "chromium failed; see " << dir_ / "chromium.log";
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 15000u) << "screenshot looks blank: " << png;
  std::cerr << "memory timeline screenshot: " << png << "\n";

  // The time axis is the wall clock (UTC, today), and the open page refreshes itself: with 7 s
  // of the browser's virtual time, its script fetched the page again and replaced the timeline.
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char today[16];
  std::strftime(today, sizeof today, "%Y-%m-%d", &utc);
  EXPECT_NE(page->body.find(std::string("time (UTC, ") + today), std::string::npos);
  const auto dom = dir_ / "memory-dom.html";
  const std::string dump = "chromium --headless --no-sandbox --disable-gpu "
                           "--virtual-time-budget=7000 --dump-dom 'http://127.0.0.1:" +
                           std::to_string(port_) + "/memory?pid=" + scenario.pid + "' > " +
                           dom.string() + " 2>> " + (dir_ / "chromium.log").string();
  ASSERT_EQ(std::system(dump.c_str()), 0) << "chromium failed; see " << dir_ / "chromium.log";
  std::ifstream dumped(dom);
  const std::string after{std::istreambuf_iterator<char>(dumped), {}};
  EXPECT_NE(after.find("<span id=\"status\">updated at "), std::string::npos) << after;
  EXPECT_EQ(count(after, "<div id=\"timeline\">"), 1u);
  EXPECT_EQ(count(after, "<rect class=\"live\""), 6u);
  finish(scenario);
}

} // namespace
} // namespace neutracer::test
