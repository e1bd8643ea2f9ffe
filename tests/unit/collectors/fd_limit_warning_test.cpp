// SPDX-License-Identifier: Apache-2.0
// The error a scan that ran out of file descriptors logs: the limit, what is needed, how often.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
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
  EXPECT_EQ(needed, kFixedDescriptors + kReservedDescriptors + 256 +
                        kHttpDescriptorsBeyondConnections + 2 * 60 + 1 +
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

TEST(FdLimitWarning, SaysWhatWasPutOffAndWhichExitsWereSeen) {
  auto scan = scan_of_200_processes();
  scan.unread_processes = 0;
  scan.pids_unlisted = true;
  scan.exits_seen = 150;
  scan.attach_put_off = true;
  const auto message = fd_limit_message(scan);
  EXPECT_NE(message.find("/proc could not be listed"), std::string::npos) << message;
  EXPECT_NE(message.find("150 traced processes were seen to exit"), std::string::npos) << message;
  EXPECT_NE(message.find("not attached until descriptors free up"), std::string::npos) << message;
}

TEST(FdLimitWarning, JournalEntryCarriesTheLimitAndIsInTheCatalog) {
  auto scan = scan_of_200_processes();
  scan.attach_put_off = true;
  const auto entry = fd_limit_journal_entry(scan, fd_limit_message(scan));
  EXPECT_EQ(entry.message_id, kFdLimitMessageId);
  EXPECT_EQ(entry.priority, 3);
  EXPECT_NE(entry.message.find("out of file descriptors"), std::string::npos) << entry.message;
  const auto field = [&](const std::string &name) {
    for (const auto &[key, value] : entry.fields)
      if (key == name)
        return value;
    return std::string("(absent)");
  };
  EXPECT_EQ(field("RLIMIT_NOFILE_SOFT"), "400");
  EXPECT_EQ(field("RLIMIT_NOFILE_HARD"), "4096");
  EXPECT_EQ(field("DESCRIPTORS_NEEDED"),
            std::to_string(descriptors_needed(scan_of_200_processes().traced)));
  EXPECT_EQ(field("UNREAD_PROCESSES"), "200");
  EXPECT_EQ(field("ATTACH_PUT_OFF"), "1");
  std::ifstream file(NEUTRACER_SOURCE_DIR "/systemd/neutracerd.catalog");
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(kFdLimitMessageId.size(), 32u);
  EXPECT_NE(text.str().find("-- " + std::string(kFdLimitMessageId) + "\n"), std::string::npos);
}

TEST(FdLimitWarning, SaysOnceWhenDescriptorsAreBackAndOnlyAfterALoggedRun) {
  FdLimitWarning warning(std::chrono::seconds(60));
  const std::chrono::steady_clock::time_point t0{};
  EXPECT_FALSE(warning.clear()) << "never at the limit";
  ASSERT_TRUE(warning.note(scan_of_200_processes(), t0));
  EXPECT_FALSE(warning.note(scan_of_200_processes(), t0 + std::chrono::seconds(2)));
  const auto back = warning.clear();
  ASSERT_TRUE(back);
  EXPECT_NE(back->find("available again after 2 scans"), std::string::npos) << *back;
  EXPECT_FALSE(warning.clear());
  // A run within the interval is not logged, so neither is its end.
  EXPECT_FALSE(warning.note(scan_of_200_processes(), t0 + std::chrono::seconds(4)));
  EXPECT_FALSE(warning.clear());
}

} // namespace
} // namespace neutracer
