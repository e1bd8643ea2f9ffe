// SPDX-License-Identifier: Apache-2.0
#pragma once
// Compares rendered text with a golden file. With NEUTRACER_UPDATE_GOLDEN=1 in the environment
// the file is rewritten instead (review the diff, and run promtool on it, before committing).
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <string>

namespace neutracer::test {

inline void expect_matches_golden(const std::string &path, const std::string &rendered) {
  const char *update = std::getenv("NEUTRACER_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    ASSERT_TRUE(out) << "cannot write " << path;
    out << rendered;
    out.close();
    ASSERT_TRUE(out) << "write failed: " << path;
    GTEST_SKIP() << "golden file rewritten: " << path;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path;
  const std::string expected{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_EQ(rendered, expected);
}

} // namespace neutracer::test
