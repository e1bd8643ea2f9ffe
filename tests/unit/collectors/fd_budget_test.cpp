// SPDX-License-Identifier: Apache-2.0
// The descriptor formula against the limit the shipped systemd unit sets.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "cuda/cuda_api_table.h"
#include "collectors/fd_budget.h"

namespace neutracer {
namespace {

// The shipped unit must hold what 1 000 adaptive-mode processes need with the default
// web.max_connections (docs/operations.md, "Open file limit").
TEST(FdBudget, TheUnitsLimitCoversAThousandProcesses) {
  std::ifstream unit(NEUTRACER_SOURCE_DIR "/systemd/neutracerd.service.in");
  std::stringstream text;
  text << unit.rdbuf();
  std::smatch match;
  const std::string content = text.str();
  ASSERT_TRUE(std::regex_search(content, match, std::regex(R"(\nLimitNOFILE=(\d+)\n)")));
  const auto limit = std::stoull(match[1]);
  // At most an entry and a return probe per probed symbol, on two driver files (an upgrade
  // leaves the old one mapped by older processes).
  const std::uint64_t probes = 2 * 2 * probed_symbols().size();
  for (const bool adaptive : {true, false})
    EXPECT_LE(descriptors_needed({1000, 2, probes, adaptive, 256}), limit) << adaptive;
}

} // namespace
} // namespace neutracer
