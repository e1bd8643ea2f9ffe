// SPDX-License-Identifier: Apache-2.0
#include "config/proc_tree_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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
  EXPECT_NE(check_proc_tree(tree.root().string()), std::nullopt);
  fs::create_directory(tree.root() / "7");
  EXPECT_EQ(check_proc_tree(tree.root().string()), std::nullopt);
}

TEST(ProcTreeCheck, SymlinkToAProcTreeIsFollowed) {
  TempProc tree;
  fs::create_directory_symlink(NEUTRACER_FIXTURES_DIR "/proc/mixed", tree.root() / "host-proc");
  EXPECT_EQ(check_proc_tree((tree.root() / "host-proc").string()), std::nullopt);
}

} // namespace
} // namespace neutracer
