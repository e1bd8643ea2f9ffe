// SPDX-License-Identifier: Apache-2.0
#include "config/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace neutracer {
namespace {

std::string error_of(const std::string &yaml) {
  const auto result = parse_config_yaml(yaml, "test.yaml");
  EXPECT_FALSE(result.config.has_value()) << yaml;
  return result.error ? result.error->what : "";
}

TEST(NvmlConfig, DefaultsLoadTheDriversLibrary) {
  const Config config;
  EXPECT_TRUE(config.nvml.enabled);
  EXPECT_EQ(config.nvml.library, "libnvidia-ml.so.1");
}

TEST(NvmlConfig, ReadsBothKeys) {
  const auto result = parse_config_yaml(
      "nvml:\n  enabled: false\n  library: /opt/nvidia/lib64/libnvidia-ml.so.1\n", "test.yaml");
  ASSERT_TRUE(result.config.has_value()) << result.error->what;
  EXPECT_FALSE(result.config->nvml.enabled);
  EXPECT_EQ(result.config->nvml.library, "/opt/nvidia/lib64/libnvidia-ml.so.1");
}

TEST(NvmlConfig, AnEmptySectionMeansDefaults) {
  const auto result = parse_config_yaml("nvml:\n", "test.yaml");
  ASSERT_TRUE(result.config.has_value());
  EXPECT_EQ(result.config->nvml, Config{}.nvml);
}

TEST(NvmlConfig, UnknownKeysAreErrors) {
  EXPECT_EQ(error_of("nvml:\n  enable: true\n"),
            "test.yaml:2: unknown key 'nvml.enable' (known keys: nvml.enabled, nvml.library)");
}

TEST(NvmlConfig, WrongTypesAreErrors) {
  EXPECT_EQ(error_of("nvml:\n  enabled: yes please\n"),
            "test.yaml:2: nvml.enabled: expected true or false, got 'yes please'");
  EXPECT_EQ(error_of("nvml:\n  library: [a, b]\n"),
            "test.yaml:2: nvml.library: expected a string, got a list");
  EXPECT_EQ(error_of("nvml: true\n"),
            "test.yaml:1: nvml: expected a mapping of keys to values, got 'true'");
}

TEST(NvmlConfig, AnEmptyLibraryIsAnError) {
  EXPECT_EQ(error_of("nvml:\n  library: \"\"\n"),
            "test.yaml:2: nvml.library: invalid value '': must not be empty (set "
            "nvml.enabled: false to turn NVML off)");
  Config config;
  config.nvml.library.clear();
  const auto problem = validate_config(config);
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->what, "nvml.library: invalid value '': must not be empty (set "
                           "nvml.enabled: false to turn NVML off)");
}

TEST(NvmlConfig, TheShippedFileDocumentsBothKeysWithTheirDefaults) {
  std::ifstream file(NEUTRACER_SOURCE_DIR "/config/neutracerd.yaml");
  ASSERT_TRUE(file.good());
  std::stringstream text;
  text << file.rdbuf();
  for (const char *line : {"\nnvml:\n", "\n  enabled: true\n", "\n  library: libnvidia-ml.so.1\n"})
    EXPECT_NE(text.str().find(line), std::string::npos) << line;
  const auto result = parse_config_yaml(text.str(), "neutracerd.yaml");
  ASSERT_TRUE(result.config.has_value());
  EXPECT_EQ(result.config->nvml, Config{}.nvml);
}

} // namespace
} // namespace neutracer
