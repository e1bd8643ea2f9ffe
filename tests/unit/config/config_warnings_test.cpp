// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <gtest/gtest.h>

namespace neutracer {
namespace {

using namespace std::chrono_literals;

TEST(ConfigWarnings, TheDefaultsWarnOfNothing) { EXPECT_TRUE(config_warnings(Config{}).empty()); }

TEST(ConfigWarnings, AStragglerWindowOfFewerThanFourScansNamesTheFix) {
  Config config;
  config.scan_interval = 10s;
  config.nccl.straggler_window = 30s;
  const auto warnings = config_warnings(config);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "nccl.straggler_window (30s) holds fewer than 4 scans of scan_interval "
            "(10s): too few for the straggler rule, which may name a slow rank late or "
            "never; set it to 40s or more");
  config.nccl.straggler_window = 40s;
  EXPECT_TRUE(config_warnings(config).empty()) << "four scans are enough";
  config.nccl.straggler_window = 30s;
  config.nccl.enabled = false;
  EXPECT_TRUE(config_warnings(config).empty()) << "no NCCL, no straggler to miss";
}

} // namespace
} // namespace neutracer
