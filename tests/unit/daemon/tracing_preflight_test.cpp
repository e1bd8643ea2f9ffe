// SPDX-License-Identifier: Apache-2.0
#include "daemon/tracing_preflight.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "cuda/cuda_tracer.h"

namespace neutracer {
namespace {

class KernelBtfCheck : public ::testing::Test {
protected:
  std::filesystem::path write(const std::string &name, const std::string &bytes) {
    const auto path = dir_ / name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  // The TracerError require_kernel_btf throws for `path`, or a failure when it throws none.
  TracerError error_for(const std::filesystem::path &path) {
    try {
      require_kernel_btf(path);
    } catch (const TracerError &error) {
      return error;
    }
    ADD_FAILURE() << "no error for " << path;
    return TracerError(TracerError::Reason::other, "");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_ = [] {
    auto dir =
        std::filesystem::temp_directory_path() / ("neutracer-btf-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir;
  }();
};

TEST_F(KernelBtfCheck, MissingBtfIsUnsupportedKernelNamingTheFix) {
  const auto error = error_for(dir_ / "vmlinux");
  EXPECT_EQ(error.reason, TracerError::Reason::unsupported);
  const std::string what = error.what();
  EXPECT_NE(what.find((dir_ / "vmlinux").string()), std::string::npos) << what;
  EXPECT_NE(what.find("No such file or directory"), std::string::npos) << what;
  EXPECT_NE(what.find("CONFIG_DEBUG_INFO_BTF=y"), std::string::npos) << what;
}

// What hiding BTF with a bind mount of an empty file looks like.
TEST_F(KernelBtfCheck, EmptyFileIsNotBtf) {
  const auto error = error_for(write("empty", ""));
  EXPECT_EQ(error.reason, TracerError::Reason::unsupported);
  EXPECT_NE(std::string(error.what()).find("empty or truncated"), std::string::npos);
}

TEST_F(KernelBtfCheck, OtherContentIsNotBtf) {
  const auto error = error_for(write("elf", "\x7f"
                                            "ELF\x02\x01\x01"));
  EXPECT_EQ(error.reason, TracerError::Reason::unsupported);
  EXPECT_NE(std::string(error.what()).find("does not hold BTF"), std::string::npos);
}

TEST_F(KernelBtfCheck, BtfHeaderPasses) {
  EXPECT_NO_THROW(require_kernel_btf(write("btf", std::string("\x9f\xeb\x01\x00\x18\x00", 6))));
}

// The build needs kernel BTF (cmake/BpfObject.cmake), so the host running the tests has it.
TEST_F(KernelBtfCheck, ThisKernelsBtfPasses) { EXPECT_NO_THROW(require_kernel_btf()); }

} // namespace
} // namespace neutracer
