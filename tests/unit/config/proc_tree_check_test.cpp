// SPDX-License-Identifier: Apache-2.0
#include "config/proc_tree_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <sys/stat.h>

#include "temp_proc.h"

namespace neutracer {
namespace {

namespace fs = std::filesystem;

TEST(ProcTreeCheck, RealProcAndFixtureTreesPass) {
  EXPECT_EQ(check_proc_tree("/proc"), std::nullopt);
  EXPECT_EQ(check_proc_tree(NEUTRACER_FIXTURES_DIR "/proc/mixed"), std::nullopt);
  EXPECT_EQ(check_proc_tree(NEUTRACER_FIXTURES_DIR "/proc/shared_library"), std::nullopt);
}

TEST(ProcTreeCheck, MissingPath) { EXPECT_EQ(check_proc_tree("/nonexistent"), "does not exist"); }

TEST(ProcTreeCheck, RegularFile) {
  EXPECT_EQ(check_proc_tree("/proc/self/status"), "is not a directory");
}

TEST(ProcTreeCheck, EmptyDirectory) {
  TempProc empty;
  EXPECT_EQ(check_proc_tree(empty.root().string()),
            "holds no process directories (numeric names such as '1'): not a /proc tree");
}

TEST(ProcTreeCheck, NumericFilesAndOtherDirectoriesAreNotProcesses) {
  TempProc tree;
  std::ofstream(tree.root() / "42") << "a file, not a process directory\n";
  fs::create_directory(tree.root() / "sys");
  fs::create_directory(tree.root() / "1a");
  std::ofstream(tree.root() / "1a" / "stat") << "1a (x) S 1\n";
  EXPECT_EQ(check_proc_tree(tree.root().string()),
            "holds no process directories (numeric names such as '1'): not a /proc tree");
}

TEST(ProcTreeCheck, ADigitFolderIsAProcessOnlyWithAStatOfItsOwnPid) {
  // Any folder with a digit-named subfolder (a backup, a build tree) used to pass (issue 33).
  TempProc tree;
  const std::string no_process =
      "holds no process directory with its own stat file (such as '1/stat' beginning \"1 (\"): "
      "not a /proc tree";
  fs::create_directory(tree.root() / "7");
  EXPECT_EQ(check_proc_tree(tree.root().string()), no_process) << "no stat";
  fs::create_directory(tree.root() / "7" / "stat");
  EXPECT_EQ(check_proc_tree(tree.root().string()), no_process) << "stat is a directory";
  fs::remove(tree.root() / "7" / "stat");
  std::ofstream(tree.root() / "7" / "stat") << "8 (sh) S 1 8 8 0 -1\n";
  EXPECT_EQ(check_proc_tree(tree.root().string()), no_process) << "another pid's stat";
  std::ofstream(tree.root() / "7" / "stat") << "7";
  EXPECT_EQ(check_proc_tree(tree.root().string()), no_process) << "cut short";
  std::ofstream(tree.root() / "7" / "stat") << "77 (sh) S 1\n";
  EXPECT_EQ(check_proc_tree(tree.root().string()), no_process) << "a longer pid";
  std::ofstream(tree.root() / "7" / "stat") << "7 (sh) S 1 7 7 0 -1\n";
  EXPECT_EQ(check_proc_tree(tree.root().string()), std::nullopt);
}

TEST(ProcTreeCheck, ANamedPipeAsStatIsRefusedWithoutBlocking) {
  TempProc tree;
  fs::create_directory(tree.root() / "7");
  ASSERT_EQ(::mkfifo((tree.root() / "7" / "stat").c_str(), 0600), 0);
  // Opening a pipe for reading blocks until a writer comes: this returning at all is the test.
  EXPECT_NE(check_proc_tree(tree.root().string()), std::nullopt);
}

TEST(ProcTreeCheck, AnyOneRealProcessAmongOthersIsEnough) {
  TempProc tree;
  fs::create_directory(tree.root() / "3"); // a process that exited mid-scan leaves no stat
  fs::create_directory(tree.root() / "12");
  std::ofstream(tree.root() / "12" / "stat") << "12 (a) (b) R 1\n";
  EXPECT_EQ(check_proc_tree(tree.root().string()), std::nullopt);
}

TEST(ProcTreeCheck, SymlinkToAProcTreeIsFollowed) {
  TempProc tree;
  fs::create_directory_symlink(NEUTRACER_FIXTURES_DIR "/proc/mixed", tree.root() / "host-proc");
  EXPECT_EQ(check_proc_tree((tree.root() / "host-proc").string()), std::nullopt);
}

} // namespace
} // namespace neutracer
