// SPDX-License-Identifier: Apache-2.0
#include "pystacks/python_version.h"

#include <gtest/gtest.h>

namespace neutracer {
namespace {

TEST(PythonVersionFromPath, LibrariesAndExecutablesName) {
  const struct {
    const char *path;
    int minor;
  } cases[] = {
      {"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", 11},
      {"/root/.pyenv/versions/3.9.18/lib/libpython3.9.so.1.0", 9},
      {"/opt/conda/lib/libpython3.12.so", 12},
      {"/usr/lib/libpython3.12d.so.1.0", 12},
      {"/usr/lib/libpython3.13t.so.1.0", 13},
      {"/usr/bin/python3.10", 10},
      {"python3.13", 13},
  };
  for (const auto &c : cases) {
    const auto version = python_version_from_path(c.path);
    ASSERT_TRUE(version.has_value()) << c.path;
    EXPECT_EQ(version->major, 3) << c.path;
    EXPECT_EQ(version->minor, c.minor) << c.path;
    EXPECT_EQ(version->micro, -1) << c.path;
  }
}

TEST(PythonVersionFromPath, OtherFilesAreNotInterpreters) {
  for (const char *path :
       {"/usr/lib/libpython3.so", "/usr/bin/python3", "/usr/bin/python", "/usr/lib/libc.so.6",
        "/usr/lib/libpython2.7.so.1.0", "/usr/bin/python3.11-config", "/x/libpython3.11.a",
        "/x/libpython3.so.1", "/x/libpython3..so", "/x/python3.x", ""})
    EXPECT_FALSE(python_version_from_path(path).has_value()) << path;
}

TEST(PythonVersionFromHex, PyVersionHoldsMajorMinorMicroAndLevel) {
  const auto version = python_version_from_hex(0x030b07f0);
  ASSERT_TRUE(version.has_value());
  EXPECT_EQ(*version, (PythonVersion{3, 11, 7}));
  EXPECT_EQ(version->text(), "3.11.7");
  EXPECT_EQ(python_version_from_hex(0x030d00a1)->text(), "3.13.0"); // an alpha
  EXPECT_FALSE(python_version_from_hex(0x020718f0).has_value());    // Python 2
  EXPECT_FALSE(python_version_from_hex(0x030b0700).has_value());    // no release level
  EXPECT_FALSE(python_version_from_hex(0x1030b07f0).has_value());   // more than 32 bits
}

} // namespace
} // namespace neutracer
