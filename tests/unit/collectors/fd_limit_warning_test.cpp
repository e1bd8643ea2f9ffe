// SPDX-License-Identifier: Apache-2.0
// The error a scan that ran out of file descriptors logs: the limit, what is needed, how often.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "collectors/fd_budget.h"
#include "collectors/fd_limit_warning.h"

namespace neutracer {
namespace {

FdLimitScan scan_of_200_processes() {
  FdLimitScan scan;
  scan.unread_processes = 200;
  scan.limit = {400, 4096};
  scan.traced = {200, 1, 60, true, 256};
  return scan;
}

TEST(FdLimitWarning, NamesTheLimitAndWhatIsNeeded) {
  const auto message = fd_limit_message(scan_of_200_processes());
  EXPECT_NE(message.find("RLIMIT_NOFILE soft 400, hard 4096"), std::string::npos) << message;
  EXPECT_NE(message.find("200 processes could not be read and are kept"), std::string::npos)
      << message;
  const auto needed = descriptors_needed(scan_of_200_processes().traced);
  EXPECT_EQ(needed, kFixedDescriptors + 256 + kHttpDescriptorsBeyondConnections + 2 * 60 + 1 +
                        200 * (1 + kLaunchLinksPerProcessAndLibrary));
  EXPECT_NE(message.find("needs about " + std::to_string(needed)), std::string::npos) << message;
  EXPECT_NE(message.find("LimitNOFILE"), std::string::npos) << message;
}

TEST(FdLimitWarning, AtMostOncePerIntervalThenSaysHowManyScans) {
  FdLimitWarning warning(std::chrono::seconds(60));
  const std::chrono::steady_clock::time_point t0{};
  EXPECT_TRUE(warning.note(scan_of_200_processes(), t0));
  EXPECT_FALSE(warning.note(scan_of_200_processes(), t0 + std::chrono::seconds(2)));
  EXPECT_FALSE(warning.note(scan_of_200_processes(), t0 + std::chrono::seconds(59)));
  const auto again = warning.note(scan_of_200_processes(), t0 + std::chrono::seconds(61));
  ASSERT_TRUE(again);
  EXPECT_NE(again->find("3 scans hit the limit"), std::string::npos) << *again;
}

} // namespace
} // namespace neutracer
