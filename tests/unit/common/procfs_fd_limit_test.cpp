// SPDX-License-Identifier: Apache-2.0
// Running out of file descriptors as common/ sees it: ProcFs tells a read that ran out from one
// of a file or process that is gone (and reads as it did through iostreams), and a direct check.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/open_file_limit.h"
#include "common/procfs.h"
#include "descriptors_exhausted.h"
#include "temp_proc.h"

namespace neutracer {
namespace {

TEST(ProcFsFdLimit, CountsOpensThatRanOutOfDescriptorsNotMissingFiles) {
  TempProc proc;
  proc.copy_scenario("shared_library");
  const ProcFs procfs(proc.root());
  EXPECT_FALSE(procfs.read(100, "no-such-file"));
  EXPECT_FALSE(procfs.read(99999, "stat"));
  EXPECT_EQ(procfs.fd_limit_failures(), 0u) << "a missing file is not the fd limit";
  const FdLimitWatch watch(procfs);
  {
    const DescriptorsExhausted exhausted;
    EXPECT_FALSE(procfs.read(100, "stat"));
    EXPECT_FALSE(procfs.for_each_line(100, "maps", [](std::string_view) {}));
    EXPECT_TRUE(procfs.list_pids().empty());
  }
  EXPECT_TRUE(watch.hit());
  EXPECT_EQ(procfs.fd_limit_failures(), 3u);
  EXPECT_TRUE(procfs.read(100, "stat")); // descriptors back
}

TEST(ProcFsFdLimit, ReadsWholeFilesAndLinesAsBefore) {
  TempProc proc;
  proc.write(7, "maps", "first line\n\nthird without newline");
  const ProcFs procfs(proc.root());
  std::vector<std::string> lines;
  ASSERT_TRUE(procfs.for_each_line(7, "maps", [&](std::string_view l) { lines.emplace_back(l); }));
  EXPECT_EQ(lines, (std::vector<std::string>{"first line", "", "third without newline"}));
  EXPECT_EQ(procfs.read(7, "maps", 5), "first");
  const std::string big(100'000, 'x');
  proc.write(7, "big", big + "\nend\n");
  lines.clear();
  ASSERT_TRUE(procfs.for_each_line(7, "big", [&](std::string_view l) { lines.emplace_back(l); }));
  EXPECT_EQ(lines, (std::vector<std::string>{big, "end"}));
}

TEST(OpenFileLimit, OutOfDescriptorsNowOnlyWhileExhausted) {
  EXPECT_FALSE(out_of_descriptors_now());
  {
    const DescriptorsExhausted exhausted;
    EXPECT_TRUE(out_of_descriptors_now());
    EXPECT_EQ(open_file_limit().soft, exhausted.soft_limit());
  }
  EXPECT_FALSE(out_of_descriptors_now());
}

} // namespace
} // namespace neutracer
